"""torchdoctor beside HolisticTraceAnalysis on the same ranks: wall time, peak memory, who is named.

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/trace_ranks.py generate /tmp/job --ranks 12 --mb 10 --slow-device 7
    PYTHONPATH=$PWD/src nice -n 10 .venv/bin/python benchmarks/trace_hta_ranks.py /tmp/job --first 4 --ranks 8 \\
        --rounds 3 --hta-python /work/hta-venv/bin/python

Takes `--ranks` files of a job written by trace_ranks.py (from the `--first`-th; 4 to 11 holds its
straggler, rank 5, and its late rank, rank 9), links them into a folder of their own, and runs,
each as a fresh process, in every round (the order rotating from round to round, so that a change
of load falls on every contender alike):

- HTA: `TraceAnalysis(trace_dir=...)` (its load: it parses the ranks in a pool of forked processes),
  then `get_temporal_breakdown`, `get_comm_comp_overlap`, `get_gpu_kernel_breakdown` (per rank
  communication time: HTA's straggler hint is the rank with the least of it, since the others wait
  for it) and `get_potential_stragglers` (its late-start straggler analysis), each timed;
- `torchdoctor trace analyze --jobs 1` and `--jobs 2` on the same files, with `--json`.

For each run: wall seconds, the peak of the whole process tree's resident memory (psutil, sampled
every 20 ms: HTA's and torchdoctor's workers included) and what it names: torchdoctor's
`stragglers`, `least_comm_rank` and the rank most often last at a collective, HTA's least-communication
rank and potential stragglers. Prints one JSON line per run, then the medians per contender.
The HTA interpreter must have holistictraceanalysis (a venv of its own: it pins its own pandas).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAMPLE_S = 0.02


def tree_run(command: list[str]) -> tuple[float, float, str]:
    """Run `command`; its wall seconds, its process tree's peak resident memory (MB, sampled) and
    its stdout. Raises CalledProcessError when it fails."""
    import psutil

    start = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        root, peak = psutil.Process(child.pid), 0
        while child.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(_rss(p) for p in tree))
            except psutil.NoSuchProcess:
                pass
            time.sleep(SAMPLE_S)
        out, err = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, command, out, err)
    return wall, peak / 1e6, out


def _rss(process: Any) -> int:
    try:
        return int(process.memory_info().rss)
    except Exception:  # the process ended between listing and reading
        return 0


def hta_child(folder: str) -> None:
    """In the HTA interpreter: load the folder, run the analyses, print their times and findings."""
    import warnings

    warnings.filterwarnings("ignore")
    from hta.trace_analysis import TraceAnalysis

    times: dict[str, float] = {}

    def timed(name: str, call: Any) -> Any:
        start = time.perf_counter()
        value = call()
        times[name] = round(time.perf_counter() - start, 2)
        return value

    analyzer = timed("load_s", lambda: TraceAnalysis(trace_dir=folder))
    timed("temporal_s", lambda: analyzer.get_temporal_breakdown(visualize=False))
    timed("overlap_s", lambda: analyzer.get_comm_comp_overlap(visualize=False))
    _, kernels = timed("kernel_breakdown_s", lambda: analyzer.get_gpu_kernel_breakdown(visualize=False))
    comm = kernels[kernels["kernel_type"] == "COMMUNICATION"].groupby("rank")["sum (us)"].sum()
    named: dict[str, Any] = {"least_comm_rank": int(comm.idxmin()) if len(comm) else None}
    try:
        potential = timed("potential_stragglers_s", lambda: analyzer.get_potential_stragglers(num_candidates=1))
        named["potential_stragglers"] = [int(r) for r in potential]
    except Exception as error:  # HTA raises where no communication kernel differs between ranks
        named["potential_stragglers_error"] = repr(error)[:200]
    print(json.dumps({**times, **named}))


def run_hta(hta_python: str, folder: Path) -> dict[str, Any]:
    wall, peak, out = tree_run([hta_python, __file__, "--hta-child", str(folder)])
    return {"who": "hta", "wall_s": round(wall, 2), "tree_peak_rss_mb": round(peak, 1),
            **json.loads(out.strip().splitlines()[-1])}  # fmt: skip


def run_torchdoctor(folder: Path, jobs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        wall, peak, _ = tree_run([sys.executable, "-m", "torchdoctor", "trace", "analyze", "--jobs", str(jobs),
                                  "--json", str(report), str(folder)])  # fmt: skip
        multi = json.loads(report.read_text())["multi_rank"]
    last = max(multi["collectives"]["last_count_by_rank"], key=lambda r: r["count"])
    return {"who": f"torchdoctor --jobs {jobs}", "wall_s": round(wall, 2), "tree_peak_rss_mb": round(peak, 1),
            "stragglers": multi["stragglers"], "least_comm_rank": multi["least_comm_rank"],
            "most_often_last_rank": last["rank"], "slow_devices": multi["slow_devices"]["ranks"]}  # fmt: skip


def linked(job: Path, first: int, ranks: int, into: Path) -> Path:
    """A folder holding links to the job's files `first` .. `first + ranks - 1`."""
    files = sorted(job.glob("rank-*.json"))[first:first + ranks]
    if len(files) < ranks:
        raise SystemExit(f"{job} has {len(files) + first} rank files; {first + ranks} are needed")
    for path in files:
        (into / path.name).symlink_to(path.resolve())
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", type=Path)
    parser.add_argument("--first", type=int, default=4)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hta-python", required=True)
    args = parser.parse_args()
    contenders = [lambda f: run_hta(args.hta_python, f), lambda f: run_torchdoctor(f, 1),
                  lambda f: run_torchdoctor(f, 2)]  # fmt: skip
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = linked(args.job, args.first, args.ranks, Path(tmp))
        for round_ in range(args.rounds):
            for k in range(len(contenders)):
                result = {**contenders[(k + round_) % len(contenders)](folder), "round": round_,
                          "load": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip
                results.append(result)
                print(json.dumps(result), flush=True)
    for who in dict.fromkeys(r["who"] for r in results):
        mine = [r for r in results if r["who"] == who]
        print(json.dumps({"who": who, "runs": len(mine), "median_wall_s": statistics.median(r["wall_s"] for r in mine),
                          "median_tree_peak_rss_mb": statistics.median(r["tree_peak_rss_mb"] for r in mine)}))
    print(json.dumps(agreement(results)))


def agreement(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether every run named the same rank as the one that makes the others wait: HTA's
    least-communication rank against torchdoctor's `least_comm_rank` and the rank most often last at
    a collective; and what each named besides."""
    hta = {r["least_comm_rank"] for r in results if r["who"] == "hta"}
    ours = {r[key] for r in results if r["who"] != "hta" for key in ("least_comm_rank", "most_often_last_rank")}
    return {"same_rank_waited_for": len(hta | ours) == 1, "hta_least_comm_rank": sorted(hta),
            "torchdoctor_rank_waited_for": sorted(ours),
            "hta_potential_stragglers": sorted({tuple(r.get("potential_stragglers", ())) for r in results
                                                if r["who"] == "hta"}),
            "torchdoctor_stragglers": sorted({tuple(r["stragglers"]) for r in results if r["who"] != "hta"}),
            "torchdoctor_slow_devices": sorted({tuple(r["slow_devices"]) for r in results if r["who"] != "hta"})}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--hta-child":
        hta_child(sys.argv[2])
    else:
        main()
