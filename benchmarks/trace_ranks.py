"""Many ranks' traces analysed in worker processes: scaling, the parent's memory, what is found.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/trace_ranks.py generate /tmp/ranks --ranks 64 --mb 10
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/trace_ranks.py measure /tmp/ranks --ranks 64 --jobs 2

`generate` makes a synthetic job from a real two-step trace of the shared fixtures
(multirank-sampled/rank-0): its steps replicated to about `--mb` MB a rank (trace_generate.py),
then per rank a jitter of +-2 % on each ProfilerStep and +-10 % on each communication kernel,
rank 5 a straggler (every step 30 % longer) and rank 9 the late participant at every collective
(its communication kernels a fifth as long: it arrives when the others have long waited); with `--slow-device RANK`, that
rank's computation kernels 30 % longer (its collectives unchanged), a slow GPU; `--plain` makes
unmodified copies (no jitter, straggler, late or slow rank), the control a slow-device test needs.
`measure` analyses the first `--ranks` files in a fresh process with `--jobs` workers (or on the
Dask cluster `--cluster`) and prints one JSON line: wall seconds, CPU seconds (this process and its
ended workers), the CPUs this process may run on and the load average before and after (what a
scaling figure needs: run it with `--jobs 1` and `--jobs 2` on otherwise idle cores, interleaved),
a hash of the report (equal reports, equal hashes), the parent's peak RSS (getrusage: this process
only, not its workers), the stragglers, the rank most often last at a collective, the slow
devices, and the file bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_generate import generate  # noqa: E402

SOURCE = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures" / "traces" / "multirank-sampled" / "rank-0.json.gz"
STRAGGLER, LATE = 5, 9


SLOW_DEVICE_FACTOR = 1.3


@dataclass(frozen=True)
class JobShape:
    """Which ranks differ: the straggler, the late participant, the slow device (None: no such rank)."""

    straggler: int | None = STRAGGLER
    late: int | None = LATE
    slow_device: int | None = None
    jitter: bool = True


def _rank_doc(base: dict, rank: int, ranks: int, rng: random.Random, shape: JobShape) -> dict:
    jitter = 0.02 if shape.jitter else 0.0
    for event in base["traceEvents"]:
        name = str(event.get("name", ""))
        if "_dur" not in event:
            continue
        if name.startswith("ProfilerStep#"):
            event["dur"] = event["_dur"] * (1 + rng.uniform(-jitter, jitter)) * (1.3 if rank == shape.straggler else 1.0)
        elif event.get("cat") == "kernel" and name.startswith("nccl"):
            event["dur"] = event["_dur"] * (1 + rng.uniform(-5 * jitter, 5 * jitter)) * (0.2 if rank == shape.late else 1.0)
        elif event.get("cat") == "kernel":
            event["dur"] = event["_dur"] * (SLOW_DEVICE_FACTOR if rank == shape.slow_device else 1.0)
    base["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": ranks}
    return base


def make_job(target: Path, ranks: int, mb: float, shape: JobShape = JobShape(), source: Path = SOURCE) -> None:
    target.mkdir(parents=True, exist_ok=True)
    generate(source.resolve(), target / "base.json", int(mb * 1e6))
    base = orjson.loads((target / "base.json").read_bytes())
    (target / "base.json").unlink()
    for event in base["traceEvents"]:
        if "dur" in event:
            event["_dur"] = event["dur"]
    for rank in range(ranks):
        doc = _rank_doc(base, rank, ranks, random.Random(rank), shape)
        events = [{k: v for k, v in e.items() if k != "_dur"} for e in doc["traceEvents"]]
        (target / f"rank-{rank:04d}.json").write_bytes(_kineto_bytes({**doc, "traceEvents": events}))


def _kineto_bytes(doc: dict) -> bytes:
    """`doc` as JSON with `distributedInfo` first and spaced as Kineto writes it (`"rank": 5`):
    HolisticTraceAnalysis finds a file's rank with the pattern `"rank":\\s+(\\d+)` in its first
    bytes, and takes every file without a match for rank 0."""
    rest = orjson.dumps({k: v for k, v in doc.items() if k != "distributedInfo"})
    return b'{"distributedInfo": ' + json.dumps(doc["distributedInfo"]).encode() + b", " + rest[1:]


def measure(folder: Path, ranks: int, jobs: int, cluster: str | None) -> dict:
    from torchdoctor.trace import analyse_traces

    files = sorted(folder.glob("rank-*.json"))[:ranks]
    load_before = os.getloadavg()
    start, cpu_start = time.perf_counter(), _cpu_s()
    report = analyse_traces(files, jobs=jobs, cluster=cluster)
    wall, cpu = time.perf_counter() - start, _cpu_s() - cpu_start
    digest = hashlib.sha256()  # of orjson.dumps(report.to_dict(), SORT_KEYS), one rank at a time
    for chunk in report.json_chunks(orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY):
        digest.update(chunk)
    multi = report.multi_rank
    last = max(multi["collectives"]["last_count_by_rank"], key=lambda r: r["count"])
    return {"ranks": len(files), "jobs": jobs, "cluster": cluster, "wall_s": round(wall, 2),
            "report_sha256": digest.hexdigest()[:16],
            "parent_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "stragglers": multi["stragglers"], "most_often_last_rank": last["rank"],
            "most_often_last_count": last["count"], "matched_collectives": multi["collectives"]["matched_count"],
            "slow_devices": multi["slow_devices"]["ranks"],
            "excluded": len(report.excluded), "mb_total": round(sum(f.stat().st_size for f in files) / 1e6, 1),
            "cpu_s": round(cpu, 2), "usable_cpus": len(os.sched_getaffinity(0)),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}


def _cpu_s() -> float:
    """User and system CPU seconds of this process and of its children that have ended (the
    workers, once the pool has shut down)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("generate", "measure"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cluster", default=None, help="a Dask scheduler's address, or local")
    parser.add_argument("--slow-device", type=int, default=None, help="this rank's compute kernels x1.3")
    parser.add_argument("--plain", action="store_true", help="unmodified copies: no jitter, straggler or late rank")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the real trace replicated")
    args = parser.parse_args()
    if args.action == "generate":
        shape = JobShape(None, None, args.slow_device, False) if args.plain else JobShape(slow_device=args.slow_device)
        make_job(args.folder, args.ranks, args.mb, shape, args.source)
    else:
        print(json.dumps(measure(args.folder, args.ranks, args.jobs, args.cluster)))


if __name__ == "__main__":
    main()
