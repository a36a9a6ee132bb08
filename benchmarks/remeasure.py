"""Independent re-measurement, shared by benchmarks/tune_zoo.py and benchmarks/finding_upside.py.

A script is run plain (`python SCRIPT`) and under `torchdoctor run --apply FILE` (knob values),
interleaved in rounds with the order rotated each round, each run a fresh process whose step times
come from the script's own steps: a `sitecustomize` module on PYTHONPATH (`step_clock/`) times
every `optimizer.step()` (or, without an optimizer, every call of the outermost module) and ends
the run after `warmup + steps` of them. Nothing of torchdoctor's observation is loaded, so what
is measured is the fix, not torchdoctor's view of it. `judge` is `torchdoctor.bench.compare_runs`,
paired by round (the median of the rounds' ratios of the runs' mean step times; each variant runs
once a round), so a claim and its re-measurement use one statistic.

The window is the observation's own (steps `warmup + 1` to `warmup + steps`, counting from the
first step's end as torchdoctor's StepClock does): a window one step later measured a compiled
step's warm-up tail and the prefetched burst of a DataLoader's workers one step less than tune did.
A claim can only be held to a 10% goal by a re-measurement more precise than that: given
`precision`, rounds are added while a variant's speed-up is less precise (`RunsVerdict.half_width`,
the rule tune's confirmation uses). Given `min_window_s`, each variant times at least that long a
window, sized from a first run of it that is not counted, by the rule tune's confirmation sizes its
windows with (`TuneConfig.confirm_steps`): in 20 steps of 2 ms, a DataLoader worker's one ~10 ms
garbage collection fell inside one program's window and outside the other's, a 15-20% difference
that a long-running script never shows.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from torchdoctor.bench import RUN_TOLERANCE, compare_runs
from torchdoctor.tune import TuneConfig
from torchdoctor.tune.trial import speedup_interval

STEP_CLOCK = Path(__file__).resolve().parent / "step_clock"
#: The longest one run may take; a field script runs 60 steps of at most ~80 ms.
RUN_TIMEOUT_S = 600.0


def run_once(argv: list[str], log: Path, steps: int, warmup: int) -> list[float]:
    """One run of `argv` timed by step_clock/sitecustomize.py: the times of steps `warmup + 1` to
    `warmup + steps` (`warmup` >= 1)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STEP_CLOCK), os.environ.get("PYTHONPATH", "")]),
           "TD_STEP_LOG": str(log), "TD_STEP_FIRST": str(warmup), "TD_STEP_LIMIT": str(warmup + steps)}
    log.unlink(missing_ok=True)
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=RUN_TIMEOUT_S)
    if not log.exists():
        raise RuntimeError(f"{argv} wrote no step times (exit {proc.returncode}): {proc.stderr[-2000:]}")
    stamps = [float(v) for v in log.read_text().split()]  # stamps[k] ends step k + 1
    times = [b - a for a, b in zip(stamps, stamps[1:])]  # times[j] is step j + 2's
    return times[warmup - 1:]


def argv_for(script: Path, args: list[str], apply: Path | None) -> list[str]:
    """The plain script's command line (`apply` None), else the script under `run --apply APPLY`."""
    if apply is None:
        return [sys.executable, str(script), *args]
    return [sys.executable, "-m", "torchdoctor", "run", "--apply", str(apply), "--", str(script), *args]


def write_apply_file(kept: dict[str, Any], path: Path) -> Path:
    """Knob values as a file `torchdoctor run --apply` reads (the oldest readable schema: no
    script hash, so one file serves any script)."""
    path.write_bytes(orjson.dumps({"schema_version": 1, "kept": kept}))
    return path


def remeasure(script: Path, args: list[str], variants: dict[str, Path | None], rounds: int, steps: int,
              warmup: int, work: Path, *, precision: float | None = None, max_rounds: int = 0,
              tolerance: float = RUN_TOLERANCE, min_window_s: float = 0.0,
              min_span_s: float = 0.0) -> dict[str, list[list[float]]]:
    """Each variant (None: the plain script, which must be `plain`; else an apply file for
    `run --apply`) run `rounds` times, interleaved with the order rotated each round, so that the
    machine's load moves every variant alike; then, given `precision`, more rounds (up to
    `max_rounds`) while any variant's speed-up over `plain` is less precise than that, or while the
    rounds have lasted less than `min_span_s` (tune's `--confirm-span`: a shared machine's minute-to-
    minute moves averaged in, as in the claim). Each variant times `steps`, or more for
    `min_window_s` (module docstring)."""
    names = list(variants)
    runs: dict[str, list[list[float]]] = {n: [] for n in names}
    windows = {name: window_steps(argv_for(script, args, variants[name]), work / f"{name}.steps", steps, warmup,
                                  min_window_s) for name in names}
    index, start = 0, time.perf_counter()
    while index < rounds or (index < max_rounds and (
            time.perf_counter() - start < min_span_s
            or (precision is not None and widest_half_width(runs, tolerance) > precision))):
        order = names[index % len(names):] + names[:index % len(names)]
        for name in order:
            runs[name].append(run_once(argv_for(script, args, variants[name]), work / f"{name}.steps",
                                       windows[name], warmup))
        index += 1
    return runs


def window_steps(argv: list[str], log: Path, steps: int, warmup: int, min_window_s: float) -> int:
    """`steps`, or, given `min_window_s`, the steps tune's confirmation would time for the pace of
    one uncounted run of `argv`."""
    if not min_window_s:
        return steps
    pace = statistics.fmean(run_once(argv, log, steps, warmup))  # a script that ends sooner times fewer
    return TuneConfig(timing_steps=max(5, steps), confirm_window_s=min_window_s).confirm_steps(pace)


def widest_half_width(runs: dict[str, list[list[float]]], tolerance: float) -> float:
    """The least precise speed-up over `plain` among the variants (infinite while one is undecided)."""
    verdicts = [compare_runs(runs["plain"], variant, tolerance=tolerance, paired=True)
                for name, variant in runs.items() if name != "plain"]
    return max((v.half_width if v.decided else math.inf for v in verdicts), default=0.0)


def judge(plain: list[list[float]], variant: list[list[float]], tolerance: float) -> dict[str, Any]:
    """The variant against the plain runs: its speed-up (plain over variant, > 1 is faster), the
    speed-up's 95% CI as tune states its claim's (`speedup_interval`: the run-to-run scatter in,
    not the bootstrap of the steps alone, which printed x96.09-x100.17 for a configuration that the
    same rounds measured at x108.46 under another name: benchmarks/results/2026-12-04-tune-zoo.md,
    run 32) and compare_runs' whole verdict."""
    verdict = compare_runs(plain, variant, tolerance=tolerance, paired=True)  # run k of each: round k
    judged = verdict.to_dict()
    return {"speedup": 1 / verdict.verdict.ratio, "speedup_ci": speedup_interval(judged), "verdict": judged}
