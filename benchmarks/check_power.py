"""`torchdoctor check` as a CI gate: false alarms, power and cost on real workloads.

For each workload (the built-in demo and zoo workloads), a temporary git repository holds the
script as commit 1; commit 2 adds extra work before every optimizer step: a fixed number of 64x64
matmuls, as many as make the step `effect` slower, calibrated on the script's own pace (what one
matmul adds to the mean wall time of a step, measured in blocks with and without extra work inside
one process). The table also gives the change the checks measured, which is what the extra work
really cost. Each cell runs N checks with the CLI's defaults (5% threshold, 300 s
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
from dataclasses import replace
from pathlib import Path
from typing import Callable

import orjson
from rich.console import Console

from torchdoctor.check import DEFAULT_POLICY
from torchdoctor.workflow.check import CheckOptions, CheckOutputs, check_against_ref
from torchdoctor.zoo import workload_path

ARGS = {"demo": ["--batch-size", "4"]}
GOALS = {0.0: "false alarms <= 5%", 0.10: "caught >= 90%", 0.05: "caught >= 50%"}

#: Appended after the script's `from __future__` line. Calibrates the deliberate slowdown on the script's own pace
#: (wall time per optimizer step, what `check` compares), in one process so that the noise between processes does
#: not enter: after 10 warm-up steps it sizes a probe of K 64x64 matmuls at about _TD_PROBE of the step from a hot loop
#: (set to the effect wanted: what a matmul adds depends on how many run in a row), then alternates
#: blocks of 5 steps without and with the probe (20 pairs) and prints the mean step without it, that plus the median
#: over pairs of what the probe added (robust to a pair that a neighbour disturbed), and K, and exits. The work's
#: cost in the loop (caches, the allocator, what overlaps it) is measured, not assumed from a hot loop.
CALIBRATE = """
import os as _td_os, time as _td_time, torch as _td_torch, torch.optim.optimizer as _td_optimizer
_td_marks, _td_state = [], {"k": 0, "on": False}
_td_a = _td_torch.randn(64, 64)
_TD_WARM, _TD_BLOCK, _TD_PAIRS, _TD_PROBE = 10, 5, 20, 0.10
def _td_extra(*_):
    if _td_state["on"]:
        for _ in range(_td_state["k"]):
            _td_a @ _td_a
def _td_mark(*_):
    _td_marks.append(_td_time.perf_counter())
    n = len(_td_marks)
    if n == _TD_WARM and not _td_state["k"]:
        step = sorted(b - a for a, b in zip(_td_marks[2:], _td_marks[3:]))[(_TD_WARM - 3) // 2]
        for _ in range(200):
            _td_a @ _td_a
        start = _td_time.perf_counter()
        for _ in range(1000):
            _td_a @ _td_a
        _td_state["k"] = max(1, round(_TD_PROBE * step / ((_td_time.perf_counter() - start) / 1000)))
        _td_marks[:] = [_td_marks[-1]]
    elif _td_state["k"] and n - 1 == 2 * _TD_BLOCK * _TD_PAIRS:
        steps = [b - a for a, b in zip(_td_marks, _td_marks[1:])]
        blocks = [steps[i:i + _TD_BLOCK] for i in range(0, len(steps), _TD_BLOCK)]
        plain = sum(sum(b) for b in blocks[0::2]) / (_TD_BLOCK * _TD_PAIRS)
        added = sorted((sum(on) - sum(off)) / _TD_BLOCK for off, on in zip(blocks[0::2], blocks[1::2]))
        print("TD_PACE", plain, plain + (added[_TD_PAIRS // 2 - 1] + added[_TD_PAIRS // 2]) / 2, _td_state["k"],
              flush=True)
        _td_os._exit(0)
    _td_state["on"] = bool(_td_state["k"]) and ((len(_td_marks) - 1) // _TD_BLOCK) % 2 == 1
_td_optimizer.register_optimizer_step_pre_hook(_td_extra)
_td_optimizer.register_optimizer_step_post_hook(_td_mark)
"""
#: The deliberate slowdown: a fixed number of 64x64 matmuls before every optimizer step, as many as
#: make the step `effect` slower (real work, no clock read in the loop: a busy loop on the thread's
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


def calibrate(source: str, args: list[str], folder: Path, effect: float, runs: int = 3) -> tuple[float, float]:
    """(the script's pace: mean wall time per optimizer step, what one 64x64 matmul adds to it in the loop when
    about `effect` x the step of them run before each step); the medians over `runs` runs, since one run of a
    short step still misjudges the matmul by up to a third now and then."""
    path = folder / "calibrate.py"
    path.write_text(inject(source, CALIBRATE.replace("_TD_PROBE = 10, 5, 20, 0.10", f"_TD_PROBE = 10, 5, 20, {effect}")))
    paces, costs = [], []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=600)
        line = next((line for line in proc.stdout.splitlines() if line.startswith("TD_PACE")), None)
        if line is None:
            raise SystemExit(f"calibration failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        plain, slowed, matmuls = (float(v) for v in line.split()[1:])
        paces.append(plain)
        costs.append((slowed - plain) / matmuls)
    if statistics.median(costs) <= 0:
        raise SystemExit(f"calibration measured no cost of the extra work ({costs}): the machine is too noisy")
    return statistics.median(paces), statistics.median(costs)


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


def run_cell(name: str, effect: float, checks: int, pace_s: float, matmul_s: float, options: dict,
             outcomes: list[dict], save: Callable[[], None]) -> None:
    """Run `checks` checks, appending each outcome to `outcomes` and calling `save` after each (a
    long cell stopped early keeps what it measured)."""
    source = workload_path(name).read_text()
    slowed = None
    if effect:
        slowed = inject(source, EXTRA_WORK.format(effect=effect, matmuls=max(1, round(effect * pace_s / matmul_s))))
    folder = Path(tempfile.mkdtemp(prefix=f"check-power-{name}-"))
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
                policy = replace(DEFAULT_POLICY, seed=seed, **options)
                result = check_against_ref("train.py", ARGS.get(name, []), ref, CheckOptions(policy=policy), outputs)
                step = result.metric("step_time")
                outcomes.append({"decision": result.decision, "exit_code": result.exit_code,
                                 "wall_s": time.monotonic() - start, "rounds": result.rounds,
                                 "planned_rounds": result.planned_rounds, "steps": result.settings.get("steps"),
                                 "ratio": step.ratio if step else None,
                                 "noise_floor": step.noise_floor if step else None,
                                 "a_step_s": step.a if step else None, "reason": result.reason})
                save()
                print(f"  {name} +{effect:.0%} #{seed}: {result.decision} in {outcomes[-1]['wall_s']:.0f} s, "
                      f"{result.rounds} of {result.planned_rounds} rounds, {result.settings.get('steps')} steps; "
                      f"{result.reason[:150]}", flush=True)
        finally:
            os.chdir(cwd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def summarise(rows: list[dict]) -> str:
    """The table of docs/check.md: per cell, exit-1 count / N (exit-2 count), and for a slowdown the
    median of the checks' own estimates (the change the injected work really made)."""
    lines = ["| workload (step) | A vs A: false alarms (undecided) | +10%: caught (undecided); measured | "
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
        lines.append(f"| {row['workload']} ({row.get('pace_s', row.get('cpu_step_s', 0)) * 1e3:.0f} ms) | {cells[0]} | {cells[1]} | {cells[2]} | "
                     f"{' / '.join(walls)} | {' / '.join(rounds)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", type=int, default=5, help="checks per cell (docs/check.md's figures use 40)")
    parser.add_argument("--workloads", default="demo,healthy_mlp,healthy_cnn")
    parser.add_argument("--effects", default="0,0.10,0.05")
    parser.add_argument("--budget", type=float, default=300.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None, help="print the table of a --json file and exit")
    args = parser.parse_args()
    if args.json:
        args.json = args.json.resolve()  # each cell runs from its temporary repository (os.chdir)
    if args.table:
        print(summarise(orjson.loads(args.table.read_bytes())["rows"]))
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    options = {"budget_s": args.budget}
    rows: list[dict] = []

    def save() -> None:
        if args.json:
            args.json.write_bytes(orjson.dumps({"checks": args.checks, "rows": rows}, option=orjson.OPT_INDENT_2))

    for name in args.workloads.split(","):
        source = workload_path(name).read_text()
        row = {"workload": name, "cells": {}, "calibration": {}}
        rows.append(row)
        for effect in (float(e) for e in args.effects.split(",")):
            pace_s, matmul_s = float("nan"), float("nan")
            if effect:
                with tempfile.TemporaryDirectory() as folder:
                    pace_s, matmul_s = calibrate(source, ARGS.get(name, []), Path(folder), effect)
                row["pace_s"] = pace_s
                row["calibration"][str(effect)] = {"pace_s": pace_s, "matmul_s": matmul_s,
                                                   "matmuls": round(effect * pace_s / matmul_s)}
                print(f"{name} +{effect:.0%}: {pace_s * 1e3:.1f} ms a step; one 64x64 matmul adds "
                      f"{matmul_s * 1e6:.1f} us to it: {round(effect * pace_s / matmul_s)} matmuls", flush=True)
            row["cells"][str(effect)] = []
            run_cell(name, effect, args.checks, pace_s, matmul_s, options, row["cells"][str(effect)], save)
    print(summarise(rows))


if __name__ == "__main__":
    main()
