"""The rank x step heat map: fits 512 ranks, marks the slow cell, draws nothing for one rank."""

from __future__ import annotations

from torchdoctor.report.rank_heatmap import SLOW_DEVICE_ROWS, rank_step_heatmap, slow_device_rows


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


def _slow_devices(ranks: int, slow: int) -> dict:
    by_rank = [{"rank": r, "median_excess_fraction": 0.3 if r == slow else 0.01 * (r % 3),
                "slower_groups_fraction": 1.0 if r == slow else 0.0} for r in range(ranks)]  # fmt: skip
    return {"ranks": [slow], "excess_threshold_fraction": 0.15, "groups_compared_count": 20, "by_rank": by_rank,
            "groups": [{"kernel": "<b>gemm</b>", "operator": "aten::mm", "median_us_over_ranks": 5.0}],
            "left_out": [{"rank": ranks, "reason": "no computation kernel"}]}  # fmt: skip


def test_the_slow_device_table_lists_the_slow_rank_first_and_a_few_others() -> None:
    table = slow_device_rows(_slow_devices(512, slow=300))
    assert table is not None and len(table["rows"]) == SLOW_DEVICE_ROWS
    assert table["rows"][0] == {"rank": 300, "slow": True, "median": "+30%", "slower": "100%"}
    assert not any(r["slow"] for r in table["rows"][1:]) and table["threshold"] == "15%"
    assert table["groups"] == ["<b>gemm</b> (in aten::mm)"] and table["left_out"] == ["rank 512: no computation kernel"]
    assert slow_device_rows(None) is None
    assert slow_device_rows({**_slow_devices(2, 1), "groups_compared_count": 0}) is None


def test_the_html_report_escapes_the_slow_device_tables_kernel_names() -> None:
    from torchdoctor.record import Record
    from torchdoctor.report.html import HtmlRenderer

    matrix = {"ranks": [0, 1], "steps": [1], "wall_us": [[1.0], [1.0]]}
    record = Record(kind="traces", trace={"ranks": [], "multi_rank": {"ranks_count": 2, "per_rank": [{"rank": 0}, {"rank": 1}],
                                                                      "step_matrix": matrix,
                                                                      "slow_devices": _slow_devices(2, 1)}})  # fmt: skip
    page = HtmlRenderer().render(record)
    assert "&lt;b&gt;gemm&lt;/b&gt; (in aten::mm)" in page and "<b>gemm</b>" not in page
    assert '<span class="warn">slow device</span>' in page
