"""The per-rank tasks on a Dask cluster (a scheduler and two workers on loopback, started here)
give the report worker processes give (trace/cluster.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from torchdoctor.trace import analyse_traces



@pytest.fixture(autouse=True)
def _dask_distributed() -> None:
    """Dask is imported when a test runs, not by every test process collecting the suite."""
    pytest.importorskip("distributed")


@pytest.mark.timeout(300)
def test_a_local_dask_cluster_gives_the_report_of_one_process(gpu_traces: Path, derive, tmp_path: Path) -> None:
    rank0, rank1 = sorted((gpu_traces / "multirank-sampled").glob("rank-*.json.gz"))
    rank2 = derive(rank0, lambda doc: doc["distributedInfo"].update(rank=2), "rank-2.json.gz")
    files = [rank0, rank1, rank2, tmp_path / "missing.json.gz"]
    options = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY
    done: list[int] = []
    clustered = analyse_traces(files, jobs=2, cluster="local", progress=lambda d, t, p: done.append(d)).to_dict()
    serial = analyse_traces(files, jobs=1).to_dict()
    assert [s["rank"] for s in clustered["ranks"]] == [0, 1, 2]
    assert [Path(e["path"]).name for e in clustered["excluded"]] == ["missing.json.gz"]
    assert orjson.dumps(clustered, option=options) == orjson.dumps(serial, option=options)
    assert done == [1, 2, 3, 4]


@pytest.mark.timeout(300)
def test_a_task_whose_dask_worker_dies_is_retried_once_then_reported(tmp_path: Path) -> None:
    from tests.trace.test_pool import shout
    from torchdoctor.trace.cluster import run_on_cluster

    items = [str(tmp_path / n) for n in ("a", "once", "die")]
    outcomes = run_on_cluster(shout, items, "local", 2)
    assert [o.value for o in outcomes] == ["A", "ONCE", None]
    assert type(outcomes[2].error).__name__ == "KilledWorker"
