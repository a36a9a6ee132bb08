"""Several rank files: the ones that cannot be read, are truncated or come from another job are
left out and named with the reason, the rest analysed; duplicate ranks named (trace/job.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.errors import TraceFormatError
from torchdoctor.trace import analyse_traces


def _pair(gpu_traces: Path) -> list[Path]:
    return sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))


def _as_rank(rank: int, world_size: int = 128):
    def edit(doc: dict) -> None:
        doc["distributedInfo"] = {**doc["distributedInfo"], "rank": rank, "world_size": world_size}
    return edit


def _drop_last_step(doc: dict) -> None:
    steps = sorted(e["ts"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep"))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not (str(e.get("name", "")).startswith("ProfilerStep")
                                                                and e["ts"] == steps[-1])]


def test_a_missing_file_and_a_file_of_another_job_are_left_out_and_named(gpu_traces: Path, derive, tmp_path) -> None:
    rank0, rank1 = _pair(gpu_traces)
    other_world = derive(rank1, _as_rank(2, world_size=64), "rank-2.json.gz")
    fewer_steps = derive(rank1, lambda d: (_as_rank(3)(d), _drop_last_step(d)), "rank-3.json.gz")
    missing = tmp_path / "rank-4.json.gz"
    report = analyse_traces([rank0, rank1, other_world, fewer_steps, missing]).to_dict()
    assert [s["rank"] for s in report["ranks"]] == [0, 1]
    assert report["multi_rank"]["ranks_count"] == 2
    reasons = {Path(e["path"]).name: e["reason"] for e in report["excluded"]}
    assert "world size 64, the other files' is 128" in reasons["rank-2.json.gz"]
    assert "profiled steps" in reasons["rank-3.json.gz"]
    assert reasons["rank-4.json.gz"].startswith("could not be read")
    assert len(report["files"]) == 5
    assert sum("left out" in w for w in report["warnings"]) == 3


def test_a_truncated_rank_is_left_out_of_several_but_read_as_far_as_it_parses_alone(
        gpu_traces: Path, tmp_path: Path) -> None:
    import gzip

    rank0, rank1 = _pair(gpu_traces)
    whole = gzip.decompress(rank1.read_bytes())
    cut = tmp_path / "rank-1-cut.json"
    cut.write_bytes(whole[: int(len(whole) * 0.9)])
    report = analyse_traces([rank0, cut]).to_dict()
    assert [s["rank"] for s in report["ranks"]] == [0]
    assert report["excluded"][0]["rank"] == 1 and "truncated" in report["excluded"][0]["reason"]
    alone = analyse_traces([cut]).to_dict()
    assert alone["ranks"][0]["truncated"] and alone["excluded"] == []


def test_duplicate_ranks_are_named_and_kept_side_by_side(gpu_traces: Path, derive) -> None:
    rank0, rank1 = _pair(gpu_traces)
    again = derive(rank1, lambda d: None, "rank-1-again.json.gz")
    report = analyse_traces([rank0, rank1, again]).to_dict()
    assert [s["rank"] for s in report["ranks"]] == [0, 1, 1]
    named = [w for w in report["warnings"] if w.startswith("rank 1 is claimed by several files")]
    assert len(named) == 1 and str(rank1) in named[0] and str(again) in named[0]


def test_one_unreadable_file_alone_raises(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a trace"}')
    with pytest.raises(TraceFormatError):
        analyse_traces([bad])
    with pytest.raises(TraceFormatError, match="No such file"):
        analyse_traces([tmp_path / "missing.json"])
