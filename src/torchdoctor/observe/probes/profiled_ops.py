"""The profiled steps' host operators, counted from the profiler's raw events: what a probe that
weighs per-operator overhead needs (the compile probe, observe/probes/compile_speed.py). The probe
runner reads them when the profiler stops, only for a probe that declares the need and applies.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: An operator whose self time is under this is small (the trace engine's TraceConfig.small_op_us).
SMALL_OP_US = 10.0


@dataclass(frozen=True)
class ProfiledOps:
    """The profiled steps' host operators, per step: how many, and the self time of the large ones
    (SMALL_OP_US or more), against the steps' wall time; microseconds."""

    ops_per_step: float
    large_self_us: float
    step_us: float

    def overhead_bound(self, model_share: float) -> float:
        """An upper bound of TD-COMP-003's host estimate, for deciding whether to probe: the model's
        share of the profiled step (`model_share`, the timed steps' forward and backward) less the
        large operators' self time. The rule takes off what the profiler added and divides by the
        shorter timed step: (a - (P - T)) / T <= a / P whenever a <= P and T <= P, and with T > P
        it takes nothing off and divides by more. So wherever the rule could speak, this is above."""
        return (model_share * self.step_us - self.large_self_us) / self.step_us if self.step_us else 0.0


def profiled_ops(profiler: torch.profiler.profile, steps: int) -> ProfiledOps | None:
    """The profiled steps' host operators, from the profiler's raw events (4 ms for 4,000 events, where
    parsing them into FunctionEvents takes 0.27 s); None when the profiler recorded nothing readable
    (the results object is torch's, not a public interface). Self time is each operator's duration
    less its direct children's on the same thread, as the trace engine reads it."""
    try:
        events = profiler.profiler.kineto_results.events()  # type: ignore[union-attr]
        cpu = [e for e in events if e.device_type() == torch.autograd.DeviceType.CPU and not e.is_python_function()]
        step_ns = [e.duration_ns() for e in cpu if e.is_user_annotation() and e.name().startswith("ProfilerStep")]
        ops = [(e.start_thread_id(), e.start_ns(), e.end_ns()) for e in cpu if not e.is_user_annotation()]
    except (AttributeError, RuntimeError):
        return None
    if not ops:
        return None
    large_ns = sum(own for own in _self_ns(ops) if own >= SMALL_OP_US * 1e3)
    count = max(1, len(step_ns) or steps)
    step_us = (sum(step_ns) / len(step_ns) if step_ns else max(e for _, _, e in ops) - min(s for _, s, _ in ops)) / 1e3
    return ProfiledOps(len(ops) / count, large_ns / 1e3 / count, step_us)


def _self_ns(ops: list[tuple[int, int, int]]) -> list[int]:
    """Each operator's self time: (thread, start, end) sorted by thread, then start, longest first,
    walked with a stack of the operators still open."""
    ordered = sorted(ops, key=lambda o: (o[0], o[1], -o[2]))
    own = [end - start for _, start, end in ordered]
    stack: list[int] = []
    for index, (thread, start, end) in enumerate(ordered):
        while stack and (ordered[stack[-1]][0] != thread or ordered[stack[-1]][2] <= start):
            stack.pop()
        if stack:
            own[stack[-1]] -= end - start
        stack.append(index)
    return own
