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

    python benchmarks/observe_overhead.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from torchdoctor.bench import compare_samples
from torchdoctor.launch import ObserveConfig, observe

WORKLOAD = Path(__file__).with_name("overhead_workload.py")
SKIP = 10  # steps excluded at the start of every run (warm-up, hook discovery)


def _times(out: Path) -> dict[str, list[float]]:
    raw = json.loads(out.read_text())
    return {clock: [t / 1e9 for t in values][SKIP:] for clock, values in raw.items()}


def plain(width: int, steps: int, out: Path) -> dict[str, list[float]]:
    subprocess.run([sys.executable, str(WORKLOAD), str(width), str(steps), str(out)], check=True)
    return _times(out)


def observed(width: int, steps: int, out: Path, tmp: Path) -> dict[str, list[float]]:
    config = ObserveConfig(warmup_steps=5, timing_steps=steps - 10, profile=False, stop_after_windows=False,
                           memory=False, compile=False)
    record = observe(WORKLOAD, [str(width), str(steps), str(out)], config, out_dir=tmp / "obs")
    assert record.exit.status == 0, record.exit
    # The Record's window starts at step 6, the script's own list after SKIP: the medians of a
    # steady state, compared as such.
    return {**_times(out), "recorded": [s.wall_s for s in record.steps]}


def measure(width: int, steps: int, rounds: int) -> dict[str, dict]:
    pooled = {clock: ([], []) for clock in ("wall", "cpu", "recorded")}
    ratios: dict[str, list[float]] = {clock: [] for clock in pooled}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            result = {}
            for which in order:
                out = tmp / f"times{which}.json"
                result[which] = plain(width, steps, out) if which == 0 else observed(width, steps, out, tmp)
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
    args = parser.parse_args()
    for label, width, steps in (("~50 ms step", 3072, 60), ("~1 ms step", 320, 600)):
        for clock, res in measure(width, steps, args.rounds).items():
            print(f"{label}, {clock} clock: plain {res['plain_step_s'] * 1e3:.3f} ms, observed "
                  f"{res['observed_step_s'] * 1e3:.3f} ms, overhead {100 * (res['ratio'] - 1):+.2f}% "
                  f"(95% CI {100 * (res['ci'][0] - 1):+.2f}% .. {100 * (res['ci'][1] - 1):+.2f}%), "
                  f"verdict: observed is {res['verdict']}; per-round ratios "
                  f"{['%.3f' % r for r in res['round_ratios']]}")


if __name__ == "__main__":
    main()
