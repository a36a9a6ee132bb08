"""The detailed observation's hooks on the ~1 ms workload, in one process, part by part: blocks of
steps alternate between the plain loop and the loop under torchdoctor's hooks (all of them, or all
but one group), timed by the main thread's CPU time, so that the machine's drift and load hit each
variant alike (far more closely than separate processes, observe_overhead_parts.py).

The hooks are installed as the observed process installs them (observe.hooks.Instrumentation on
a step clock that never reaches its timing window, so that no window's work is measured); a
variant leaves one group out: the DataLoader's timed `__next__`, the patched backward, the
module-forward hooks (the global discovery pre-hook and the outermost module's pair), the warnings
filter that silences torch's warning about the global hook when compiling; `steps
only` keeps only the hooks that end steps (the optimizer's; ObserveConfig.steps_only). The figure
is the median over blocks of the CPU µs a step, and its excess over the plain blocks'; beside it
the same of the 10th percentile over blocks, steadier when other processes load the machine.

`--variants plain,all` measures only those (more blocks of each in the same time; to compare two
versions of torchdoctor, run it alternately with PYTHONPATH pointing at each).

    python benchmarks/observe_hook_parts.py [--blocks 40] [--block-steps 100] [--variants plain,all]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch
from torch.utils.data import DataLoader, TensorDataset

from torchdoctor.observe.facts import Facts
from torchdoctor.observe.hooks import Instrumentation
from torchdoctor.observe.steps import PhaseCallbacks, StepClock


def _workload() -> Callable[[int], float]:
    """The ~1 ms step of overhead_workload.py; the returned function runs N steps and gives the
    main thread's CPU µs a step."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(64 * 64, 256), torch.randn(64 * 64, 1)), batch_size=64)
    model = torch.nn.Sequential(torch.nn.Linear(256, 320), torch.nn.ReLU(), torch.nn.Linear(320, 320),
                                torch.nn.ReLU(), torch.nn.Linear(320, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)

    def run(steps: int) -> float:
        done, start = 0, time.thread_time_ns()
        while done < steps:
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
                done += 1
                if done >= steps:
                    break
        return (time.thread_time_ns() - start) / steps / 1e3

    return run


class _Without(Instrumentation):
    """The hooks less one group (`leave_out`: "data", "backward", "forward" or "warning filter")."""

    leave_out = ""

    def _patch_dataloader(self) -> None:
        if self.leave_out != "data":
            super()._patch_dataloader()

    def _patch_backward(self) -> None:
        if self.leave_out != "backward":
            super()._patch_backward()

    def _silence_own_hook_warning(self) -> None:
        if self.leave_out != "warning filter":
            super()._silence_own_hook_warning()

    def install(self, *, steps_only: bool = False) -> None:
        super().install(steps_only=steps_only)
        if self.leave_out == "forward":
            self._remove_discovery()


def _hooks(leave_out: str) -> Instrumentation:
    noop = lambda *a: None  # noqa: E731
    hooks = type("Hooks", (_Without,), {"leave_out": leave_out})(
        StepClock(10**9, 1, 0, PhaseCallbacks(noop, noop, noop, noop, noop, noop)), Facts())
    return hooks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--block-steps", type=int, default=100)
    parser.add_argument("--variants", default="", help="comma-separated: plain, all, data, backward, forward, "
                        "warning filter, steps only (default: every one)")
    options = parser.parse_args()
    run = _workload()
    run(200)  # warm-up
    variants = ["plain", "all hooks", "less data", "less backward", "less forward", "less warning filter",
                "steps only"]
    if options.variants:
        chosen = options.variants.split(",")
        variants = [v for v in variants if v.removeprefix("less ").removesuffix(" hooks") in chosen]
    per_step: dict[str, list[float]] = {v: [] for v in variants}
    for block in range(options.blocks):
        for variant in variants[block % len(variants):] + variants[:block % len(variants)]:
            hooks = None if variant == "plain" else _hooks(variant.removeprefix("less ").replace("all hooks", ""))
            if hooks is not None:
                hooks.install(steps_only=variant == "steps only")
            try:
                run(5)  # the hooks' first calls (discovery) out of the block
                per_step[variant].append(run(options.block_steps))
            finally:
                if hooks is not None:
                    hooks.uninstall()
    plain, plain_low = statistics.median(per_step["plain"]), _low(per_step["plain"])
    for variant in variants:
        median, low = statistics.median(per_step[variant]), _low(per_step[variant])
        print(f"{variant:<14} {median:8.1f} µs a step (CPU), {median - plain:+6.1f} µs; "
              f"10th percentile {low:8.1f} µs, {low - plain_low:+6.1f} µs")


def _low(values: list[float]) -> float:
    """The 10th percentile over blocks: on a busy machine, the blocks least slowed by other work."""
    return statistics.quantiles(values, n=10)[0]


if __name__ == "__main__":
    main()
