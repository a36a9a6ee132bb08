"""`torchdoctor lint` speed: CPU and wall time of whole runs, two source trees side by side.

Runs `python -m torchdoctor lint --format json PATH...` once per round with each source tree
(`--src`, e.g. a `git archive` of the commit before and this checkout's `src`), interleaved A, B,
A, B... so that a busy machine's drift hits both alike. Reports per tree every round's user+system
CPU seconds of the lint process (from `os.wait4`, which a busy machine inflates far less than wall
time) and its wall seconds, their medians, the machine's load average before and after, and
whether every run's JSON output is identical to the first tree's first run (the results must not
change when only the speed does).

    python benchmarks/lint_speed.py --src /tmp/before/src --src src /tmp/examples [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def lint_once(src: str, paths: list[str]) -> tuple[float, float, bytes]:
    """(CPU s, wall s, JSON output) of one lint run with `src` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    command = [sys.executable, "-m", "torchdoctor", "lint", "--format", "json", *paths]
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = child.stdout.read() if child.stdout else b""
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped by wait4
    wall = time.perf_counter() - start
    return usage.ru_utime + usage.ru_stime, wall, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", action="append", required=True, help="a source tree (repeat: A, then B)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    cpu: dict[str, list[float]] = {src: [] for src in args.src}
    wall: dict[str, list[float]] = {src: [] for src in args.src}
    reference, identical = None, True
    for _ in range(args.rounds):
        for src in args.src:
            seconds, elapsed, out = lint_once(src, args.paths)
            cpu[src].append(seconds)
            wall[src].append(elapsed)
            reference = out if reference is None else reference
            identical = identical and out == reference
    print(f"load average after: {os.getloadavg()}")
    print("| source | CPU s (runs) | median CPU s | wall s (runs) | median wall s |")
    print("|---|---|---|---|---|")
    for src in args.src:
        runs_cpu = ", ".join(f"{s:.2f}" for s in cpu[src])
        runs_wall = ", ".join(f"{s:.1f}" for s in wall[src])
        print(
            f"| {src} | {runs_cpu} | {statistics.median(cpu[src]):.2f} | {runs_wall} | "
            f"{statistics.median(wall[src]):.1f} |"
        )
    print(f"JSON output identical in every run: {identical}")


if __name__ == "__main__":
    main()
