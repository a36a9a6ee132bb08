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
import statistics
import time
from typing import Any, Callable

import torch

from torchdoctor.knobs import REGISTRY
from torchdoctor.knobs.patching import wrap_forward
from torchdoctor.observe.probes.anomaly import anomaly_detection_on
from torchdoctor.observe.probes.base import PROFILED_OPS, Phase, ProbeContext, probe
from torchdoctor.observe.probes.blocks import BlockProbe
from torchdoctor.observe.probes.profiled_ops import ProfiledOps
from torchdoctor.probe_values import COMPILE_SPEED, CompileSpeedValue

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
#: The bound on TD-COMP-003's estimate from which the probe runs: under the rule's 15% warning, as
#: the raw events and the trace engine may part a little on what an operator is.
MIN_OVERHEAD_BOUND = 0.12


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

    def to_dict(self) -> CompileSpeedValue | None:
        """Its value in `Record.probes` (docs/record-schema.md); None if it never began."""
        measured = self.measured()
        if measured is None:
            return None
        return {"value": dict(VALUE), "ops_per_step": round(self.ops.ops_per_step, 1),
                "overhead_bound": round(self.ops.overhead_bound(self.model_share), 4), "complete": measured["complete"],
                "reason": measured["reason"], "samples": measured["samples"], "lead_in_s": self.lead_in_s,
                "step_s_eager": measured["step_s_script"], "step_s_compiled": measured["step_s_tried"],
                "speedup": measured["speedup"],
                "speedup_ci": measured["speedup_ci"], "verdict": measured["verdict"]}


def _may_compile(ctx: ProbeContext) -> bool:
    return ctx.config.compile_probe and ctx.may_probe() and host_only()


@probe(COMPILE_SPEED.name, Phase.AFTER_WINDOWS, order=3, applies=_may_compile, needs=frozenset({PROFILED_OPS}))
def compiled(ctx: ProbeContext) -> CompileProbe | None:
    """Only where TD-COMP-003 could speak on a CPU: enough operators a profiled step (not so many
    that compiling takes minutes: MAX_OPS_PER_STEP), a bound on its estimate above its threshold
    (`ProfiledOps.overhead_bound`), a model, and none of the cases in which the rule is silent
    (anomaly mode: TD-COMP-007 explains the overhead; one sample a forward: batching is
    TD-COMP-018's fix); nor a script that compiles (its graphs are its own), nor one that takes
    gradients of gradients (`create_graph=True`: torch.compile's AOT autograd raises on a double
    backward, inside the script's own step)."""
    root, ops, samples = ctx.hooks._first_root, ctx.profiled_ops, ctx.clock.samples
    if root is None or ops is None or not samples or ctx.script_compiles or ctx.facts.create_graph:
        return None
    if not MIN_OPS_PER_STEP <= ops.ops_per_step <= MAX_OPS_PER_STEP:
        return None
    one_sample = statistics.median(parts.batch_size or 0 for _, parts in samples) == 1
    if anomaly_detection_on(ctx.facts) or (ctx.clock.source == "forward" and one_sample):
        return None
    model_share = sum(parts.forward_ns + parts.backward_ns for _, parts in samples) / sum(w for w, _ in samples)
    if ops.overhead_bound(model_share) < MIN_OVERHEAD_BOUND:
        return None
    return CompileProbe(root, ops, model_share, compiler=ctx.hooks.compile_unrecorded)
