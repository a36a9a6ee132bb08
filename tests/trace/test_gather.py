"""Ranks analysed in worker processes give the report one process gives (trace/gather.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from torchdoctor.trace import analyse_traces


def _four_ranks(gpu_traces: Path, derive) -> list[Path]:
    rank0, rank1 = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))

    def as_rank(rank: int):
        def edit(doc: dict) -> None:
            doc["distributedInfo"]["rank"] = rank
            for event in doc["traceEvents"]:  # rank 3 a little slower, so the ranks differ
                if rank == 3 and event.get("ph") == "X" and isinstance(event.get("dur"), (int, float)):
                    event["dur"] *= 1.05
        return edit

    return [rank0, rank1, derive(rank0, as_rank(2), "rank-2.json.gz"), derive(rank1, as_rank(3), "rank-3.json.gz")]


def _canonical(report: dict) -> bytes:
    return orjson.dumps(report, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


@pytest.mark.timeout(240)
def test_two_worker_processes_give_the_report_of_one_process(gpu_traces: Path, derive) -> None:
    files = _four_ranks(gpu_traces, derive)
    seen: list[tuple[int, int]] = []
    pooled = analyse_traces(files, jobs=2, progress=lambda done, total, path: seen.append((done, total))).to_dict()
    serial = analyse_traces(files, jobs=1).to_dict()
    assert [s["rank"] for s in pooled["ranks"]] == [0, 1, 2, 3]
    assert len(pooled["rank_timelines"]) == 4 and pooled["timeline"] is not None
    assert _canonical(pooled) == _canonical(serial)
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


@pytest.mark.parametrize("jobs, cpus, split", [(2, 2, False), (2, 4, True), (4, 4, False)])
def test_workers_that_fill_the_cores_read_each_file_in_one_process(jobs, cpus, split, monkeypatch) -> None:
    from torchdoctor.trace import gather, halves
    from torchdoctor.trace.pool import Outcome

    tasks = []

    def run_each(fn, items, workers, on_done=None):  # each task recorded; the first file "loads"
        tasks.extend(items)
        return [Outcome(value=SimpleNamespace(first_timeline=None)) for _ in items]

    monkeypatch.setattr(gather, "run_each", run_each)
    monkeypatch.setattr(halves, "usable_cpus", lambda: cpus)
    gather.gather_ranks([f"rank-{i}.json" for i in range(6)], gather.TraceConfig(), jobs)
    # The first file is read alone (it sets the timeline's step): it may always use a second core.
    assert tasks[0].split and {t.split for t in tasks[1:]} == {split}
