"""The lean observation's cost a step, in the main thread's CPU time, on a loop of near-empty steps.

Each run (a subprocess) times 20,000 iterations of `for batch in loader: optimizer.zero_grad();
optimizer.step()` on one small parameter (a step of a few µs: what is left is the hooks' cost) in
blocks of 1,000, by the main thread's CPU time (`time.thread_time_ns`, which other processes on a
busy machine inflate far less than the wall clock), either plain or under the whole run's lean
observation exactly as `torchdoctor watch` leaves it after its windows: the optimizer's step hook
kept and pointed at the stream, the DataLoader's `__next__` timed, the epoch hook, and the
sampling thread (a stack sample every 50 ms, memory four times a second, the stream written once a
second). Plain and lean runs alternate for several rounds; the difference of the medians is the
cost of one step, against the 10 µs that 1% of a 1 ms step allows; the process's CPU time (every
thread, the sampling thread's included) is reported beside it.

    python benchmarks/lean_hook_cost.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

ITERATIONS, BLOCK = 20_000, 1_000


def _loop(loader, optimizer) -> tuple[list[float], float]:
    """The main thread's CPU µs a step, a value a block; and the whole process's (every thread's)."""
    process_start = time.process_time_ns()
    per_step, done, start = [], 0, time.thread_time_ns()
    while done < ITERATIONS:
        for batch in loader:
            optimizer.zero_grad()
            optimizer.step()
            done += 1
            if done % BLOCK == 0:
                now = time.thread_time_ns()
                per_step.append((now - start) / BLOCK / 1e3)
                start = now
            if done >= ITERATIONS:
                break
    return per_step, (time.process_time_ns() - process_start) / ITERATIONS / 1e3


def child(mode: str, folder: str) -> None:
    import torch

    from torchdoctor.observe.facts import Facts
    from torchdoctor.observe.hooks import Instrumentation
    from torchdoctor.observe.lean import LeanHooks
    from torchdoctor.observe.steps import PhaseCallbacks, StepClock
    from torchdoctor.observe.watch import RunWatch

    torch.set_num_threads(1)
    param = torch.nn.Parameter(torch.zeros(4))
    param.grad = torch.zeros(4)
    optimizer = torch.optim.SGD([param], lr=0.1)
    loader = torch.utils.data.DataLoader(torch.zeros(1000, 4), batch_size=1)
    if mode == "lean":
        noop = lambda *args: None  # noqa: E731
        clock = StepClock(warmup_steps=2, timing_steps=1, profile_steps=0,
                          callbacks=PhaseCallbacks(noop, noop, noop, noop, noop, noop))
        hooks = Instrumentation(clock, Facts())
        hooks.install()
        for batch in loader:  # the detailed windows: step detection settles on the optimizer
            optimizer.step()
            if clock.count >= 4:
                break
        watch = RunWatch(folder, 0, sample_interval_s=0.05, raw_steps=100_000, max_bytes=64 * 2**20)
        lean = LeanHooks(watch)
        watch.start()
        lean.install_epochs()
        hooks.keep_step_hook(watch.step)
        lean.install_steps(clock.source or "", None)
    blocks, process = _loop(loader, optimizer)
    print(json.dumps({"blocks": blocks, "process": process}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--child", choices=("plain", "lean"))
    parser.add_argument("--folder", default="")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder)
        return
    pooled: dict[str, list[float]] = {"plain": [], "lean": []}
    process: dict[str, list[float]] = {"plain": [], "lean": []}
    rounds = []
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            medians = {}
            for mode in (("plain", "lean") if r % 2 == 0 else ("lean", "plain")):
                out = subprocess.run([sys.executable, __file__, "--child", mode, "--folder", folder],
                                     check=True, capture_output=True, text=True).stdout
                result = json.loads(out.splitlines()[-1])
                blocks = result["blocks"][2:]  # the first blocks warm up
                pooled[mode] += blocks
                process[mode].append(result["process"])
                medians[mode] = statistics.median(blocks)
            rounds.append(medians["lean"] - medians["plain"])
    plain, lean = statistics.median(pooled["plain"]), statistics.median(pooled["lean"])
    print(f"plain {plain:.2f} µs a step, lean {lean:.2f} µs a step (CPU time): the lean observation "
          f"costs {lean - plain:.2f} µs a step, {(lean - plain) / 10:.2f}% of a 1 ms step; per round "
          f"{[round(d, 2) for d in rounds]} µs")
    every = {mode: statistics.median(values) for mode, values in process.items()}
    print(f"every thread of the process (the sampling thread included), mean over a run: plain "
          f"{every['plain']:.2f} µs a step, lean {every['lean']:.2f} µs: {every['lean'] - every['plain']:.2f} µs")


if __name__ == "__main__":
    main()
