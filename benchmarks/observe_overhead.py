"""Observation overhead: median step time under torchdoctor's hooks against the plain script.

For a ~50 ms step and a ~1 ms step, runs the same workload plainly and under `observe` (hooks on,
no profiler window, the script not stopped), interleaved plain/observed for several rounds so that
machine drift hits both alike. The workload times its own steps, so both runs use one clock.
Reports, per step size, the ratio of median step times (observed / plain) with its bootstrap 95%
interval from torchdoctor.bench over the pooled steady-state steps, and the per-round ratios.

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
from torchdoctor.observe import ObserveConfig, observe

WORKLOAD = Path(__file__).with_name("overhead_workload.py")
SKIP = 10  # steps excluded at the start of every run (warm-up, hook discovery)


def plain(width: int, steps: int, out: Path) -> list[float]:
    subprocess.run([sys.executable, str(WORKLOAD), str(width), str(steps), str(out)], check=True)
    return [t / 1e9 for t in json.loads(out.read_text())][SKIP:]


def observed(width: int, steps: int, out: Path, tmp: Path) -> list[float]:
    config = ObserveConfig(warmup_steps=5, timing_steps=steps - 10, profile=False, stop_after_windows=False)
    record = observe(WORKLOAD, [str(width), str(steps), str(out)], config, out_dir=tmp / "obs")
    assert record.exit.status == 0, record.exit
    return [t / 1e9 for t in json.loads(out.read_text())][SKIP:]


def measure(width: int, steps: int, rounds: int) -> dict:
    a_all: list[float] = []
    b_all: list[float] = []
    ratios = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            result: dict[int, list[float]] = {}
            for which in order:
                out = tmp / f"times{which}.json"
                result[which] = plain(width, steps, out) if which == 0 else observed(width, steps, out, tmp)
            a_all += result[0]
            b_all += result[1]
            ratios.append(float(np.median(result[1]) / np.median(result[0])))
    verdict = compare_samples(a_all, b_all)
    return {"width": width, "plain_step_s": float(np.median(a_all)), "observed_step_s": float(np.median(b_all)),
            "ratio": verdict.ratio, "ci": [verdict.ci_low, verdict.ci_high], "verdict": verdict.verdict,
            "round_ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for label, width, steps in (("~50 ms step", 2048, 60), ("~1 ms step", 64, 600)):
        res = measure(width, steps, args.rounds)
        print(f"{label}: plain {res['plain_step_s'] * 1e3:.3f} ms, observed {res['observed_step_s'] * 1e3:.3f} ms, "
              f"overhead {100 * (res['ratio'] - 1):+.2f}% (95% CI {100 * (res['ci'][0] - 1):+.2f}% .. "
              f"{100 * (res['ci'][1] - 1):+.2f}%), verdict: observed is {res['verdict']}; "
              f"per-round ratios {['%.3f' % r for r in res['round_ratios']]}")


if __name__ == "__main__":
    main()
