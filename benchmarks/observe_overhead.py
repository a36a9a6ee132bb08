"""Observation overhead: median step time under torchdoctor's hooks against the plain script.

For a ~50 ms step and a ~1 ms step, runs the same workload plainly and under `observe` (hooks on,
no profiler window, the script not stopped), interleaved plain/observed for several rounds so that
machine drift hits both alike. The workload times its own steps, so both runs use one clock.
Reports, per step size and per clock (wall time, and the main thread's CPU time, which a busy
machine does not inflate), the ratio of median step times (observed / plain) with its bootstrap
95% interval from torchdoctor.bench over the pooled steady-state steps, and the per-round ratios.
A third row, `recorded`, is what torchdoctor reports: the observed run's Record step times (its
hooks' own time left out, observe.steps) against the plain script's own wall clock; the first is
what observing costs the script, the second how far the figure torchdoctor prints is off.

With `--mode lean` the observed run is `torchdoctor watch`'s: the detailed windows at the start
(5 + 20 steps, no profiler, no memory step), then the lean observation of the whole run (one step
hook, the data wait, a stack sample every 50 ms, the stream to disk, observe.watch); the first
`LEAN_SKIP` steps of each run are left out, so the steps compared are the lean ones, and the
`recorded` row is not made (the lean steps are in the whole run's stream, not the Record's steps).

    python benchmarks/observe_overhead.py [--rounds 5] [--mode detailed|lean] [--sizes 1ms,50ms]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from torchdoctor.bench import compare_samples
from torchdoctor.launch import ObserveConfig, observe

WORKLOAD = Path(__file__).with_name("overhead_workload.py")
SKIP = 10  # steps excluded at the start of every run (warm-up, hook discovery)
LEAN_SKIP = 60  # with --mode lean: past the windows (25 steps) and the switch to the lean hooks


def _times(out: Path, skip: int) -> dict[str, list[float]]:
    raw = json.loads(out.read_text())
    return {clock: [t / 1e9 for t in values][skip:] for clock, values in raw.items()}


def plain(width: int, steps: int, out: Path, skip: int) -> dict[str, list[float]]:
    subprocess.run([sys.executable, str(WORKLOAD), str(width), str(steps), str(out)], check=True)
    return _times(out, skip)


def observed(width: int, steps: int, out: Path, tmp: Path) -> dict[str, list[float]]:
    config = ObserveConfig(warmup_steps=5, timing_steps=steps - 10, profile=False, stop_after_windows=False,
                           memory=False, compile=False)
    shutil.rmtree(tmp / "obs", ignore_errors=True)
    record = observe(WORKLOAD, [str(width), str(steps), str(out)], config, out_dir=tmp / "obs")
    assert record.exit.status == 0, record.exit
    # The Record's window starts at step 6, the script's own list after SKIP: the medians of a
    # steady state, compared as such.
    return {**_times(out, SKIP), "recorded": [s.wall_s for s in record.steps]}


def watched(width: int, steps: int, out: Path, tmp: Path) -> dict[str, list[float]]:
    """The script under `torchdoctor watch`'s observation: its own times of the lean steps."""
    config = ObserveConfig(warmup_steps=5, timing_steps=20, profile=False, stop_after_windows=False, memory=False,
                           compile=False, threads_probe=False, compile_probe=False, watch=True)
    shutil.rmtree(tmp / "obs", ignore_errors=True)
    record = observe(WORKLOAD, [str(width), str(steps), str(out)], config, out_dir=tmp / "obs")
    assert record.exit.status == 0, record.exit
    return _times(out, LEAN_SKIP)


def measure(width: int, steps: int, rounds: int, lean: bool = False) -> dict[str, dict]:
    clocks = ("wall", "cpu") if lean else ("wall", "cpu", "recorded")
    skip = LEAN_SKIP if lean else SKIP
    pooled = {clock: ([], []) for clock in clocks}
    ratios: dict[str, list[float]] = {clock: [] for clock in pooled}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            result = {}
            for which in order:
                out = tmp / f"times{which}.json"
                if which == 0:
                    result[which] = plain(width, steps, out, skip)
                else:
                    result[which] = (watched if lean else observed)(width, steps, out, tmp)
            for clock, (a_all, b_all) in pooled.items():
                plain_clock = "wall" if clock == "recorded" else clock  # the Record against the plain script's clock
                a_all += result[0][plain_clock]
                b_all += result[1][clock]
                ratios[clock].append(float(np.median(result[1][clock]) / np.median(result[0][plain_clock])))
    out = {}
    for clock, (a_all, b_all) in pooled.items():
        verdict = compare_samples(a_all, b_all)
        out[clock] = {"plain_step_s": float(np.median(a_all)), "observed_step_s": float(np.median(b_all)),
                      "ratio": verdict.ratio, "ci": [verdict.ci_low, verdict.ci_high], "verdict": verdict.verdict,
                      "round_ratios": ratios[clock]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mode", choices=("detailed", "lean"), default="detailed")
    parser.add_argument("--sizes", default="50ms,1ms", help="step sizes to measure: 50ms, 1ms or both")
    parser.add_argument("--steps", type=int, default=0, help="steps of the ~1 ms workload (default 600; lean 3000)")
    args = parser.parse_args()
    lean = args.mode == "lean"
    sizes = {"50ms": ("~50 ms step", 3072, 60 + (LEAN_SKIP if lean else 0)),
             "1ms": ("~1 ms step", 320, args.steps or (3000 if lean else 600))}
    for label, width, steps in (sizes[s] for s in args.sizes.split(",")):
        for clock, res in measure(width, steps, args.rounds, lean).items():
            print(f"{label}, {clock} clock: plain {res['plain_step_s'] * 1e3:.3f} ms, observed "
                  f"{res['observed_step_s'] * 1e3:.3f} ms, overhead {100 * (res['ratio'] - 1):+.2f}% "
                  f"(95% CI {100 * (res['ci'][0] - 1):+.2f}% .. {100 * (res['ci'][1] - 1):+.2f}%), "
                  f"verdict: observed is {res['verdict']}; per-round ratios "
                  f"{['%.3f' % r for r in res['round_ratios']]}")


if __name__ == "__main__":
    main()
