"""Where the detailed observation's cost on a small step goes: the ~1 ms workload of
observe_overhead.py run plainly and under `observe` with parts of the observation switched off,
all variants interleaved round by round so that the machine's drift hits each alike.

Variants (the detailed window as observe_overhead.py runs it: no profiler, no memory step, the
script not stopped):
  plain        the script alone
  default      every hook
  steps_only   only the hooks that end steps (the optimizer's; ObserveConfig.steps_only): no
               DataLoader, backward or module-forward hooks
  no_sampler   every hook, the system sampler's thread asleep (one sample an hour)
  no_probes    every hook, the threads and compile probes off

The workload times its own steps (wall time and the main thread's CPU time, which the other
processes of a busy machine do not inflate); each round's figure is the median of the timing
window's steps, and the table gives the median over rounds and its excess over `plain`.

    python benchmarks/observe_overhead_parts.py [--rounds 5] [--steps 600]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from torchdoctor.launch import ObserveConfig, observe

WORKLOAD = Path(__file__).with_name("overhead_workload.py")
WIDTH = 320  # the ~1 ms step of observe_overhead.py
SKIP = 10  # the steps before the timing window (warm-up, hook discovery)
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "steps_only": {"steps_only": True, "threads_probe": False},
    "no_sampler": {"system_interval_s": 3600.0},
    "no_probes": {"threads_probe": False, "compile_probe": False},
}


def _medians(out: Path, steps: int) -> dict[str, float]:
    """The median step of the timing window, µs, by clock."""
    raw = json.loads(out.read_text())
    return {clock: statistics.median(values[SKIP:steps - SKIP]) / 1e3 for clock, values in raw.items()}


def _run(variant: str, steps: int, tmp: Path) -> dict[str, float]:
    out = tmp / "times.json"
    args = [str(WIDTH), str(steps), str(out)]
    if variant == "plain":
        subprocess.run([sys.executable, str(WORKLOAD), *args], check=True)
    else:
        config = ObserveConfig(warmup_steps=5, timing_steps=steps - 10, profile=False, stop_after_windows=False,
                               memory=False, compile=False, **VARIANTS[variant])
        shutil.rmtree(tmp / "obs", ignore_errors=True)
        record = observe(WORKLOAD, args, config, out_dir=tmp / "obs")
        assert record.exit.status == 0, record.exit
    return _medians(out, steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=600)
    options = parser.parse_args()
    names = ["plain", *VARIANTS]
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp_name:
        for r in range(options.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:  # each round starts elsewhere
                rounds[name].append(_run(name, options.steps, Path(tmp_name)))
    plain = {clock: statistics.median(r[clock] for r in rounds["plain"]) for clock in ("wall", "cpu")}
    print(f"{'variant':<11} {'wall µs':>9} {'excess':>8} {'cpu µs':>9} {'excess':>8}  cpu by round")
    for name in names:
        med = {clock: statistics.median(r[clock] for r in rounds[name]) for clock in ("wall", "cpu")}
        print(f"{name:<11} {med['wall']:9.1f} {med['wall'] - plain['wall']:+8.1f} {med['cpu']:9.1f} "
              f"{med['cpu'] - plain['cpu']:+8.1f}  {[round(r['cpu']) for r in rounds[name]]}")


if __name__ == "__main__":
    main()
