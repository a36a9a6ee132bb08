"""`torchdoctor tune` with a noisy neighbour and without: the same knobs must be found, and each
kept speed-up must hold when re-measured independently.

For each workload, two tunes (the order of the two conditions alternates from workload to
workload, so that a drift of the machine's load does not favour one):
- `neighbour`: two busy processes (a Python loop each, one per core of a 2-core machine) start
  with the tune and run for its first `--neighbour-s` seconds (15): the baseline's first runs, and
  its diagnosis, see them;
- `quiet`: no process started (the machine's own load, stated with the results).
Then each condition's kept knobs are re-measured as tune_zoo.py does (benchmarks/remeasure.py:
the plain script and `torchdoctor run --apply TUNED.json` interleaved in rounds, each run's step
times from the script's own steps). Goals: the kept knob names equal in both conditions; each
claim within 10% of its re-measurement; the tiny-operator script (`tiny_activation`, a custom
activation that is a Python loop of tiny operators) finds `compile` under the neighbour.

    python benchmarks/tune_neighbour.py [--workloads tiny_activation,compute_tiny_ops,field/x]
        [--neighbour-s 15] [--time-budget 600] [--max-trials 8] [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from remeasure import judge, remeasure
from tune_zoo import WORKLOADS

from torchdoctor.store import RunStore
from torchdoctor.tune import TuneConfig, Tuner

TINY = Path(__file__).resolve().parents[1] / "tests" / "tune" / "scripts" / "tiny_activation.py"
ALL_WORKLOADS: dict[str, tuple[Path, list[str]]] = {
    "tiny_activation": (TINY, []), **{name: (script, args) for name, (script, args, _) in WORKLOADS.items()}}
BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def neighbours(count: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """`count` busy processes, each spinning one core for `seconds`."""
    return [subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=seconds)]) for _ in range(count)]


def tune_once(name: str, condition: str, options: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One tune of workload `name` under `condition`, then its kept knobs re-measured."""
    script, args = ALL_WORKLOADS[name]
    work.mkdir(parents=True, exist_ok=True)
    config = TuneConfig(time_budget_s=options.time_budget, max_trials=options.max_trials)
    busy = neighbours(2, options.neighbour_s) if condition == "neighbour" else []
    start = time.perf_counter()
    try:
        with RunStore(work / "runs.db") as store:
            result = Tuner(script, args, config, store=store, work_dir=work).run()
    finally:
        for process in busy:  # each started here, ended by its own id
            process.kill()
            process.wait()
    wall_s = time.perf_counter() - start
    row: dict[str, Any] = {"workload": name, "condition": condition, "kept": result.kept, "summary": result.summary,
                           "claimed_speedup": result.speedup if result.kept else 1.0, "confirmed": result.confirmed,
                           "trials": len(result.trials) - 1, "tune_wall_s": wall_s, "stop_reason": result.stop_reason,
                           "tried": [t["knob"] for t in result.trials[1:]], "search": result.search,
                           "load_average": os.getloadavg()}
    if result.kept:
        tuned = result.save(work / "tuned.json")
        runs = remeasure(script, args, {"plain": None, "tuned": tuned}, options.rounds, 30, 5, work,
                         precision=0.05, max_rounds=options.rounds * 2, min_window_s=1.0)
        remeasured = judge(runs["plain"], runs["tuned"], config.run_tolerance)["speedup"]
        row.update(remeasured_speedup=remeasured, claim_over_remeasured=row["claimed_speedup"] / remeasured)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a markdown table, one row per workload and condition."""
    lines = ["| workload | condition | kept | claimed | re-measured | claim / re-measured | trials | wall | "
             "compile tried |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        kept = ", ".join(f"{k}={v!r}" for k, v in row["kept"].items()) or "nothing"
        remeasured = row.get("remeasured_speedup")
        lines.append(f"| {row['workload']} | {row['condition']} | {kept} | x{row['claimed_speedup']:.2f} | "
                     + (f"x{remeasured:.2f} | {row['claim_over_remeasured']:.2f}" if remeasured else "- | -")
                     + f" | {row['trials']} | {row['tune_wall_s']:.0f} s | {'compile' in row['tried']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="tiny_activation")
    parser.add_argument("--neighbour-s", type=float, default=15.0)
    parser.add_argument("--time-budget", type=float, default=600.0)
    parser.add_argument("--max-trials", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/tune_neighbour"))
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    rows = []
    for index, name in enumerate(options.workloads.split(",")):
        conditions = ("neighbour", "quiet") if index % 2 == 0 else ("quiet", "neighbour")
        for condition in conditions:
            rows.append(tune_once(name, condition, options, options.work / name.replace("/", "_") / condition))
            print(orjson.dumps(rows[-1], default=str).decode(), flush=True)
    for name in dict.fromkeys(row["workload"] for row in rows):
        found = [sorted(row["kept"]) for row in rows if row["workload"] == name]
        print(f"{name}: same knobs found in both conditions: {all(f == found[0] for f in found)}")
    print(table(rows))
    if options.out:
        options.out.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2, default=str))


if __name__ == "__main__":
    main()
