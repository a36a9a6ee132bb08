"""The rank x step heat map: fits 512 ranks, marks the slow cell, draws nothing for one rank."""

from __future__ import annotations

from torchdoctor.report.rank_heatmap import rank_step_heatmap


def _matrix(ranks: int, steps: int, slow: tuple[int, int]) -> dict:
    walls = [[100_000.0] * steps for _ in range(ranks)]
    walls[slow[0]][slow[1]] = 160_000.0
    walls[1][0] = None  # a rank without that step: no cell
    return {"ranks": list(range(ranks)), "steps": list(range(10, 10 + steps)), "wall_us": walls}


def test_512_ranks_fit_with_a_pixel_a_rank_and_labels_that_do_not_overlap() -> None:
    heat = rank_step_heatmap(_matrix(512, 40, slow=(300, 5)))
    assert heat is not None and heat["cell_h"] >= 1 and heat["height"] <= 1024
    assert len(heat["cells"]) == 512 * 40 - 1
    gaps = {b["y"] - a["y"] for a, b in zip(heat["labels"], heat["labels"][1:])}
    assert min(gaps) >= 10
    red = [c for c in heat["cells"] if c["shade"] == "rgb(255,0,0)"]
    assert [c["title"] for c in red] == ["rank 300, step 15: 160.00 ms (+60% vs median)"]


def test_one_rank_or_no_matrix_draws_nothing() -> None:
    assert rank_step_heatmap(None) is None
    assert rank_step_heatmap({"ranks": [0], "steps": [1], "wall_us": [[1.0]]}) is None


def test_the_html_report_of_two_real_ranks_draws_the_map(gpu_traces) -> None:
    from torchdoctor.record import Record
    from torchdoctor.report.html import HtmlRenderer
    from torchdoctor.trace import analyse_traces

    pair = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))
    record = Record(kind="traces")
    record.trace = analyse_traces(pair).to_dict()
    page = HtmlRenderer().render(record)
    assert page.count('<svg class="heatmap"') == 1
    assert "<title>rank 1, step 552: " in page and "rank 0</text>" in page
    assert 'svg class="heatmap"' not in HtmlRenderer().render(Record(kind="traces"))
