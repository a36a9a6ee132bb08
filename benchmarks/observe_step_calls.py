"""What the detailed observation calls in each step of the ~1 ms workload: the workload observed
in this one process (the bootstrap's `begin`, then the script's code) under cProfile, and per step
the calls of torchdoctor's own Python functions and the built-ins they call (clocks, `getpid`,
writes). Counts, not times: cProfile's own cost per call dwarfs these calls' times, but the
counts are the machine's load-free measure of the work each step adds.

    python benchmarks/observe_step_calls.py [--steps 2000]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
from pathlib import Path

from torchdoctor.observe.config import CONFIG_ENV, ObserveConfig

WORKLOAD = Path(__file__).with_name("overhead_workload.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    steps = parser.parse_args().steps
    out_dir = tempfile.mkdtemp(prefix="observe-step-calls-")
    config = ObserveConfig(warmup_steps=5, timing_steps=steps - 10, profile=False, stop_after_windows=False,
                           memory=False, compile=False, out_dir=out_dir)
    os.environ[CONFIG_ENV] = config.to_env()
    from torchdoctor.observe.bootstrap import begin  # reads the config from the environment

    observed = begin([str(WORKLOAD), "320", str(steps), f"{out_dir}/times.json"])
    profile = cProfile.Profile()
    profile.enable()
    exec(observed.script.code, observed.script.namespace)
    profile.disable()
    ours, builtins = 0, {}
    for (file, _, function), (_, calls, _, _, callers) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        if "torchdoctor" in file:
            ours += calls
        elif file == "~":
            from_ours = sum(c[1] for key, c in callers.items() if "torchdoctor" in key[0])
            if from_ours >= steps / 2:
                builtins[function] = from_ours / steps
    print(f"torchdoctor's Python functions: {ours / steps:.1f} calls a step")
    for function, calls in sorted(builtins.items(), key=lambda kv: -kv[1]):
        print(f"  {calls:6.2f} a step  {function}")
    observed.ended(None)
    observed.exit()


if __name__ == "__main__":
    main()
