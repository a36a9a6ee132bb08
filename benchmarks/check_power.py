"""`torchdoctor check` as a CI gate: false alarms, power and cost on real workloads.

For each workload (the built-in demo and zoo workloads), a temporary git repository holds the
script as commit 1; commit 2 adds `effect` x the workload's CPU time per step as extra work before
every optimizer step: a fixed number of 64x64 matmuls, calibrated in a plain run (the CPU time of
a step, and of one matmul). The table also gives the change the checks measured, which is what the
extra work really cost. Each cell runs N checks with the CLI's defaults (5% threshold, 300 s
budget, 3 warm-up + 10 timed steps or 0.5 s of them for short steps, rounds planned from the budget
up to 400, A-vs-A control), a different seed each:
  effect 0:    `check --against HEAD` on the clean tree: exit 1 is a false alarm (goal <= 5%);
  effect 0.10: `check --against HEAD~1`: exit 1 is a catch (goal >= 90%);
  effect 0.05: likewise (goal >= 50%).
Also the median wall time of one check (goal < 3 min for a 50 ms step). Workloads run with one
intra-op thread (OMP_NUM_THREADS=1), as CPU jobs on a shared runner should.

    python benchmarks/check_power.py --checks 5
    python benchmarks/check_power.py --checks 40 --workloads demo,healthy_mlp,healthy_cnn --json power.json
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from rich.console import Console

from torchdoctor.workflow.check import CheckOptions, CheckOutputs, check_against_ref
from torchdoctor.zoo import workload_path

ARGS = {"demo": ["--batch-size", "4"]}
GOALS = {0.0: "false alarms <= 5%", 0.10: "caught >= 90%", 0.05: "caught >= 50%"}

#: Appended after the script's `from __future__` line: a hook after every optimizer step; after 25
#: steps it prints the median CPU time per step and that of one 64x64 matmul, and exits.
CALIBRATE = """
import os as _td_os, time as _td_time, torch as _td_torch, torch.optim.optimizer as _td_optimizer
_td_marks = []
def _td_mark(*_):
    _td_marks.append(_td_time.thread_time())
    if len(_td_marks) == 25:
        deltas = sorted(b - a for a, b in zip(_td_marks[5:], _td_marks[6:]))
        a = _td_torch.randn(64, 64)
        for _ in range(200):
            a @ a
        start = _td_time.thread_time()
        for _ in range(2000):
            a @ a
        print("TD_CPU_PER_STEP", deltas[len(deltas) // 2], (_td_time.thread_time() - start) / 2000, flush=True)
        _td_os._exit(0)
_td_optimizer.register_optimizer_step_post_hook(_td_mark)
"""
#: The deliberate slowdown: a fixed number of 64x64 matmuls before every optimizer step, as many as
#: `effect` x the step's CPU time (real work, no clock read in the loop: a busy loop on the thread's
#: CPU clock made some processes of this VM run twice as slow afterwards).
EXTRA_WORK = """
import torch as _td_torch, torch.optim.optimizer as _td_optimizer
_td_a = _td_torch.randn(64, 64)
def _td_extra(*_):  # benchmarks/check_power.py: {effect:.0%} more work per step
    for _ in range({matmuls}):
        _td_a @ _td_a
_td_optimizer.register_optimizer_step_pre_hook(_td_extra)
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
                   check=True, capture_output=True)


def inject(source: str, code: str) -> str:
    marker = "from __future__ import annotations\n"
    if marker in source:
        return source.replace(marker, marker + code, 1)
    return code + source


def calibrate(source: str, args: list[str], folder: Path) -> tuple[float, float]:
    """(median CPU time of the main thread per optimizer step, CPU time of one 64x64 matmul)."""
    path = folder / "calibrate.py"
    path.write_text(inject(source, CALIBRATE))
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=600)
    line = next(line for line in proc.stdout.splitlines() if line.startswith("TD_CPU_PER_STEP"))
    step_s, matmul_s = (float(v) for v in line.split()[1:])
    return step_s, matmul_s


def repository(folder: Path, source: str, slowed: str | None) -> Path:
    repo = folder / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet")
    (repo / "train.py").write_text(source)
    git(repo, "add", "train.py")
    git(repo, "commit", "--quiet", "-m", "base")
    if slowed is not None:
        (repo / "train.py").write_text(slowed)
        git(repo, "commit", "--quiet", "-am", "slower")
    return repo


def run_cell(name: str, effect: float, checks: int, cpu_step_s: float, matmul_s: float, options: dict) -> list[dict]:
    source = workload_path(name).read_text()
    matmuls = max(1, round(effect * cpu_step_s / matmul_s))
    slowed = inject(source, EXTRA_WORK.format(effect=effect, matmuls=matmuls)) if effect else None
    folder = Path(tempfile.mkdtemp(prefix=f"check-power-{name}-"))
    outcomes = []
    try:
        repo = repository(folder, source, slowed)
        ref = "HEAD~1" if effect else "HEAD"
        cwd = os.getcwd()
        os.chdir(repo)
        try:
            for seed in range(checks):
                outputs = CheckOutputs(console=Console(file=io.StringIO()), progress=False,
                                       store_path=folder / "store" / "runs.db")
                start = time.monotonic()
                result = check_against_ref("train.py", ARGS.get(name, []), ref, CheckOptions(seed=seed, **options),
                                           outputs)
                step = result.metric("step_time")
                outcomes.append({"decision": result.decision, "exit_code": result.exit_code,
                                 "wall_s": time.monotonic() - start, "rounds": result.rounds,
                                 "planned_rounds": result.planned_rounds, "steps": result.settings.get("steps"),
                                 "ratio": step.ratio if step else None,
                                 "noise_floor": step.noise_floor if step else None,
                                 "a_step_s": step.a if step else None, "reason": result.reason})
                print(f"  {name} +{effect:.0%} #{seed}: {result.decision} in {outcomes[-1]['wall_s']:.0f} s, "
                      f"{result.rounds} of {result.planned_rounds} rounds, {result.settings.get('steps')} steps; "
                      f"{result.reason[:150]}", flush=True)
        finally:
            os.chdir(cwd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return outcomes


def summarise(rows: list[dict]) -> str:
    """The table of docs/check.md: per cell, exit-1 count / N (exit-2 count), and for a slowdown the
    median of the checks' own estimates (the change the injected work really made)."""
    lines = ["| workload (CPU per step) | A vs A: false alarms (undecided) | +10%: caught (undecided); measured | "
             "+5%: caught (undecided); measured | median wall per check (A-A / +10% / +5%) | median rounds |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        cells, walls, rounds = [], [], []
        for effect in (0.0, 0.10, 0.05):
            outcomes = row["cells"].get(str(effect))
            if not outcomes:
                cells.append("-")
                walls.append("-")
                rounds.append("-")
                continue
            n = len(outcomes)
            caught = sum(o["exit_code"] == 1 for o in outcomes)
            undecided = sum(o["exit_code"] == 2 for o in outcomes)
            ratios = [o["ratio"] for o in outcomes if o["ratio"]]
            measured = f"; {100 * (statistics.median(ratios) - 1):+.1f}%" if effect and ratios else ""
            cells.append(f"{caught} / {n} ({undecided}){measured}")
            walls.append(f"{statistics.median(o['wall_s'] for o in outcomes):.0f} s")
            rounds.append(f"{statistics.median(o['rounds'] for o in outcomes):g}")
        lines.append(f"| {row['workload']} ({row['cpu_step_s'] * 1e3:.0f} ms) | {cells[0]} | {cells[1]} | {cells[2]} | "
                     f"{' / '.join(walls)} | {' / '.join(rounds)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", type=int, default=5, help="checks per cell (the issue's goal: 40)")
    parser.add_argument("--workloads", default="demo,healthy_mlp,healthy_cnn")
    parser.add_argument("--effects", default="0,0.10,0.05")
    parser.add_argument("--budget", type=float, default=300.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None, help="print the table of a --json file and exit")
    args = parser.parse_args()
    if args.table:
        print(summarise(orjson.loads(args.table.read_bytes())["rows"]))
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    options = {"budget_s": args.budget}
    rows = []
    for name in args.workloads.split(","):
        source = workload_path(name).read_text()
        with tempfile.TemporaryDirectory() as folder:
            cpu_step_s, matmul_s = calibrate(source, ARGS.get(name, []), Path(folder))
        print(f"{name}: {cpu_step_s * 1e3:.1f} ms of CPU per step; one 64x64 matmul {matmul_s * 1e6:.1f} us",
              flush=True)
        row = {"workload": name, "cpu_step_s": cpu_step_s, "matmul_s": matmul_s, "cells": {}}
        for effect in (float(e) for e in args.effects.split(",")):
            row["cells"][str(effect)] = run_cell(name, effect, args.checks, cpu_step_s, matmul_s, options)
        rows.append(row)
        if args.json:
            args.json.write_bytes(orjson.dumps({"checks": args.checks, "rows": rows}, option=orjson.OPT_INDENT_2))
    print(summarise(rows))


if __name__ == "__main__":
    main()
