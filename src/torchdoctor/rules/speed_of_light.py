"""The generic finding of the speed-of-light accounting (torchdoctor.accounting): a large cost
below its speed of light, with its operators, dtypes, shapes and the script's line, so that a
problem no other rule knows is reported rather than passed over. The engine keeps it only where no
other finding explains the same slice (accounting.explain)."""

from __future__ import annotations

from torchdoctor.accounting.build import health
from torchdoctor.accounting.explain import MATTERS, UNEXPLAINED_ID
from torchdoctor.accounting.section import CostCentre, Slice
from torchdoctor.capability import requirement
from torchdoctor.finding import Fix
from torchdoctor.rules.base import Hit, rule, severity_at
from torchdoctor.rules.capabilities import run_torch
from torchdoctor.rules.evidence import Evidence

#: The slices that are a cost below a speed of light (a compute or a memory bound).
BELOW_SPEED_OF_LIGHT = ("compute_below_peak", "memory_bound", "small_ops")
#: The claimed upside (the named operators' time beyond where a healthy step runs them) from which it
#: is reported, a warning, a problem.
REPORTED, WARNING, PROBLEM = 0.05, 0.10, 0.25


@rule(UNEXPLAINED_ID, "compute")
def below_speed_of_light(ev: Evidence) -> Hit | None:
    """The largest slice of the waterfall that is time operators spend below their speed of light
    (compute-bound ones below their dtype's measured peak, memory-bound ones, operators shorter than
    their dispatch) takes MATTERS (10%) of the step or more, with an operator in it below its speed of
    light; never on a busy machine (`Accounting.busy`). Upside: the named operators' share of the
    step beyond where a healthy step runs them (`_beyond`), reported from 5%, a warning from 10%, a
    problem from 25%."""
    accounting = ev.accounting()
    if accounting.busy:
        return None  # descheduled operators read slow everywhere; the accounting's note says so
    slices = [s for s in accounting.slices if s.kind in BELOW_SPEED_OF_LIGHT and s.share >= MATTERS and s.ops]
    if not slices:
        return None
    worst = max(slices, key=lambda s: s.share)
    upside = sum(_beyond(c) for c in worst.ops)
    if upside < REPORTED:
        return None
    severity = severity_at(upside, WARNING, PROBLEM) or "info"
    top = worst.ops[0]
    return Hit(severity, f"{worst.share:.0%} of the step: {worst.label}; largest {top.name} ({top.dtype})",
               upside, _evidence(worst, accounting.mfu), _explanation(top),
               Fix(_fix(worst.kind, requirement("compile", run_torch(ev))), "torchdoctor diagnose --json run.json -- SCRIPT  # accounting.slices"))


def _beyond(c: CostCentre) -> float:
    """The operator's share of the step beyond what it would take where a healthy step runs it
    (accounting.build.health: HEALTHY of its dtype's peak, or HEALTHY_ALONE of the same operator
    alone on the same inputs, which is what a fix of the step can win back where the peak is out of
    the operator's reach); all of it for an operator shorter than its dispatch, none where nothing
    to weigh it against is known (a convolution's backward, whose FLOPs the profiler does not count;
    an operator not replayed alone)."""
    if c.bound == "overhead":
        return c.share
    reach = health(c.name, c.bound, c.peak_fraction, c.alone_fraction)
    return 0.0 if reach is None else c.share * max(0.0, 1 - reach)


def _evidence(worst: Slice, mfu: float | None) -> dict[str, object]:
    return {"slice": worst.kind, "slice_fraction": round(worst.share, 4), "mfu": None if mfu is None else round(mfu, 4),
            "operators": [_op(c) for c in worst.ops[:3]]}


def _op(c: CostCentre) -> dict[str, object]:
    return {"operator": c.name, "dtype": c.dtype, "shapes": c.shapes, "share_fraction": round(c.share, 4),
            "peak_fraction": None if c.peak_fraction is None else round(c.peak_fraction, 4),
            "alone_fraction": None if c.alone_fraction is None else round(c.alone_fraction, 4), "source": c.source}


def _explanation(top: CostCentre) -> str:
    where = f" (called from {top.source})" if top.source else ""
    return (f"{top.name} on {top.dtype} {top.shapes}{where}: {top.why}. No other finding explains this time; "
            "it is what the step costs beyond this machine's speed of light.")


def _fix(kind: str, compile_needs: str) -> str:
    """The fix for a slice of `kind`; where it names torch.compile and the run's torch may lack it,
    `compile_needs` ("torch.compile needs torch >= 2.0; ...") follows."""
    text = {"compute_below_peak": "Give the matrix products larger, aligned shapes (batch more work per call), "
                                  "or a faster dtype where the hardware has one; check the thread count.",
            "memory_bound": "Fuse or remove the memory-bound operators (torch.compile fuses elementwise chains), "
                            "or do their work once instead of every step.",
            "small_ops": "Batch the many small operators into fewer, larger ones (vectorise the loop, "
                         "torch.compile, foreach optimizers)."}[kind]
    return f"{text} ({compile_needs}.)" if compile_needs and "torch.compile" in text else text
