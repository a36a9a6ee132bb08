"""The compile probe: a few steps of the user's own loop with the outermost module compiled, measured
in place against its eager steps (probes/blocks.py).

TD-COMP-003 (many tiny operators, fix: torch.compile) estimates its upside from the trace: the
model's time that no large operator accounts for. What compiling wins of it depends on the graph
breaks, Dynamo's guards and what the backend fuses, which no trace says: on the Hugging Face
Trainer field script the estimate claimed 14-22% where compiling measured x1.00-x1.06, and on the
zoo's compute_tiny_ops it claimed x4.3 where compiling measured x7 (docs/field.md). So, on a CPU run
where the rule could speak (enough operators a profiled step, and a bound on its estimate above its
threshold: `ProfiledOps`), the module's forward is compiled as the `compile` knob's first choice
compiles it, and blocks of compiled and eager steps alternate. Compiling happens in the first
compiled steps (forward, then backward), so LEAD_IN steps run compiled before the blocks and are
not counted; their time is the probe's cost (seconds per graph on a CPU).

Errors in compiling fall back to eager (Dynamo's `suppress_errors`), and Dynamo's and Inductor's
logs are held back, for the probe only: the script must not die of a probe, nor its output fill
with a backend's traceback. The eager forward is restored afterwards, and on any early end.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from torchdoctor.knobs import REGISTRY
from torchdoctor.knobs.patching import wrap_forward
from torchdoctor.observe.probes.blocks import BlockProbe

KNOB = "compile"
#: torch's loggers held back while the probe compiles.
QUIET = ("torch._dynamo", "torch._inductor")
#: The value the probe compiles with: the compile knob's first choice on a CPU, what `tune` tries
#: first and what the finding's `run --apply` applies.
VALUE = {"mode": "default", "dynamic": False}
#: Compiled steps before the blocks: the forward graphs compile in the first, the backward graphs
#: in the first backward; the second catches a recompile the first step's state may cause.
LEAD_IN = 2
#: Host operators per profiled step from which the probe runs: TD-COMP-003's own floor
#: (rules/compute.py OPS_PER_STEP, which this layer may not import).
MIN_OPS_PER_STEP = 300
#: Above this the probe is not run: compiling a graph of that many operators takes minutes on a CPU
#: (pytorch/examples time_sequence_prediction's LSTM cells unrolled over 1,000 time steps, 56,512
#: operators a step: 125 s; the Trainer's 1,185: 8-55 s; the zoo's tiny ops, 3,206: 3-45 s, the
#: longer ones with Inductor's cache empty), and the estimate stands.
MAX_OPS_PER_STEP = 20_000
#: An operator whose self time is under this is small (the trace engine's TraceConfig.small_op_us).
SMALL_OP_US = 10.0
#: The bound on TD-COMP-003's estimate from which the probe runs: under the rule's 15% warning, as
#: the raw events and the trace engine may part a little on what an operator is.
MIN_OVERHEAD_BOUND = 0.12


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


def host_only() -> bool:
    """No GPU in use: TD-COMP-003 reads a GPU run's claim from its kernels' launch statistics, and
    the probe is for the host's estimate (not tried on a GPU here)."""
    return not (torch.cuda.is_available() and torch.cuda.is_initialized())


class CompileProbe(BlockProbe):
    """`compiler(forward, **VALUE)` compiles (torch.compile unless given: the observation passes one
    that is not recorded as the script's call; tests, one that generates no code)."""

    label = "probing torch.compile (compiling first)"

    def __init__(self, root: torch.nn.Module, ops: ProfiledOps, model_share: float, *,
                 compiler: Callable[..., Callable[..., Any]] | None = None,
                 clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        super().__init__(clock_ns=clock_ns, lead_in=LEAD_IN)
        REGISTRY[KNOB].check(VALUE)
        self.root, self.ops, self.model_share = root, ops, model_share
        self._compile = compiler or torch.compile
        self._compiled: Callable[..., Any] | None = None
        self._undo: Callable[[], None] | None = None
        self._suppress: bool | None = None  # Dynamo's setting before the probe
        self._levels: dict[str, int] = {}  # QUIET's levels before the probe

    def _apply(self, side: str) -> None:
        if side == "tried" and self._undo is None:
            if self._compiled is None:
                import torch._dynamo  # imported by torch.compile anyway; here only for its config

                self._suppress = torch._dynamo.config.suppress_errors
                torch._dynamo.config.suppress_errors = True
                for name in QUIET:
                    self._levels[name] = logging.getLogger(name).level
                    logging.getLogger(name).setLevel(logging.CRITICAL + 1)
                self._compiled = self._compile(self.root.forward, **VALUE)
            compiled = self._compiled
            self._undo = wrap_forward(self.root, lambda _: compiled)
        elif side == "script" and self._undo is not None:
            self._undo()
            self._undo = None

    def close(self, reason: str | None) -> None:
        super().close(reason)
        if self._suppress is not None:
            import torch._dynamo

            torch._dynamo.config.suppress_errors, self._suppress = self._suppress, None
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)
        self._levels = {}

    def to_dict(self) -> dict[str, Any] | None:
        """The Record's `compile_probe` section (docs/record-schema.md); None if it never began."""
        measured = self.measured()
        if measured is None:
            return None
        return {"value": dict(VALUE), "ops_per_step": round(self.ops.ops_per_step, 1),
                "overhead_bound": round(self.ops.overhead_bound(self.model_share), 4), "complete": measured["complete"],
                "reason": measured["reason"], "samples": measured["samples"], "lead_in_s": self.lead_in_s,
                "step_s_eager": measured["step_s_script"], "step_s_compiled": measured["step_s_tried"],
                "speedup": measured["speedup"],
                "speedup_ci": measured["speedup_ci"], "verdict": measured["verdict"]}
