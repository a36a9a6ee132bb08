"""Ranks analysed in worker processes give the report one process gives (trace/gather.py)."""

from __future__ import annotations

from pathlib import Path

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
