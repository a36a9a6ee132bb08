"""Rules on calls of the script that do work a standard API avoids, each named by what the script
called (the operator-costs probe's `script_calls`, observe/probes/script_calls.py): a layer built
inside the step, an optimizer, scheduler, gradient scaler, DataLoader or TorchScript trace built
again every step, an explicit matrix inverse, the log of a softmax, tensors formatted as text, the
argument checks of `torch.distributions`, and a penalty summed one parameter at a time.

Each of these runs at full speed, so the speed-of-light accounting cannot see it: the waste is that
the work is done at all. What the rules rest on is what was called, and how often (counts, which the
machine's load does not change); the calls' share of the profiled step sizes the upside, estimated.

Sources: the `torch.linalg.inv` docs ("consider using torch.linalg.solve ... faster and more
numerically stable"), the `nn.Softmax`/`F.log_softmax` docs (log_softmax: "faster and has better
numerical properties"), the PyTorch forums' "creating a layer in forward" threads (a new, untrained
layer each step), the `torch.distributions.Distribution` docs (`validate_args`,
`set_default_validate_args`), the `logging` HOWTO ("Optimization": arguments formatted only when a
message is emitted), the `torch.nn.utils.parametrize` docs (`cached()`), the `torch.jit.trace` docs
(trace once, then call the traced module), the PyTorch forums' "optimizer in the training loop"
threads (its state starts from zero each time).
"""

from __future__ import annotations

import re

from torchdoctor.probe_values import OP_COSTS, ScriptCall
from torchdoctor.rules.base import Fix, Hit, rule
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.host_calls import capped_outside, every_step, share_severity
from torchdoctor.rules.outside import share_of_step

#: A module's constructor, as the Python tracer names it (`torch.nn.modules.linear.__init__`).
MODULE_INIT = re.compile(r"^torch\.nn\.modules\.[\w.]+\.__init__$")
#: Set-up the script's loop should do once, by the callee the tracer names, with what is lost when
#: it is done again every step: (callee pattern, what is built, what rebuilding it costs beyond time).
SETUP_CALLS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^torch\.optim\.lr_scheduler\.__init__$"), "a learning-rate scheduler",
     "the schedule restarts at every step, so the learning rate never follows it"),
    (re.compile(r"^torch\.optim\.[\w.]+\.__init__$"), "an optimizer",
     "its state (momentum buffers, Adam's moment estimates) is thrown away and starts from zero every step"),
    (re.compile(r"^torch\.(?:cuda\.)?amp\.grad_scaler\.__init__$"), "a gradient scaler",
     "its loss scale restarts from the initial value every step and never settles"),
    (re.compile(r"^torch\.jit\._trace\.trace(?:_module)?$|^torch\.jit\._script\.script$"), "a TorchScript module",
     "each call records (or compiles) the whole model again and checks the trace by running it once more"),
    (re.compile(r"^torch\.utils\.data\.dataloader\.__init__$"), "a DataLoader",
     "its sampler and iterator, and its workers when it has some, start over every step"),
)
INVERSES = frozenset({"linalg_inv", "linalg_inv_ex", "inverse", "Tensor.inverse"})
SOFTMAXES = frozenset({"torch.nn.functional.softmax", "softmax", "Tensor.softmax"})
LOGS = frozenset({"log", "Tensor.log"})
#: Tensor formatting called by the script (an f-string, `str(t)`), or a builtin that formats what it
#: is given (`print(t)`): the latter count only when operators ran inside them, as formatting a
#: tensor's elements runs some and printing plain numbers none.
FORMATTERS = frozenset({"torch._tensor.__format__", "torch._tensor.__repr__", "torch._tensor.__str__"})
PRINTERS = frozenset({"print", "str", "repr", "format"})
DISTRIBUTION_INIT = re.compile(r"^torch\.distributions\.[\w.]+\.__init__$")
#: A penalty's per-parameter operators, called on the Parameter itself (`p.pow(2)`, `p.abs()`), and
#: how many a step one function makes while iterating the model's parameters: a Python loop over
#: them rather than a statistic of a few.
PENALTY_METHODS = frozenset({"Parameter.pow", "Parameter.abs", "Parameter.norm", "Parameter.square"})
PARAMETER_ITERATORS = frozenset({"torch.nn.modules.module.parameters", "torch.nn.modules.module.named_parameters"})
PARAMETER_LOOP = 16
#: The constraint checks' reduction (`constraint.check(value).all()`), one or more per argument.
CHECK_OPERATOR = "aten::all"
#: A parametrized tensor's getter (`torch.nn.utils.parametrize`), and the reads of one per forward
#: from one function from which they are recomputation.
PARAMETRIZED = frozenset({"torch.nn.utils.parametrize.get_parametrized"})
REREADS = 2
CACHED_READS = 0.05


def _share(calls: list[ScriptCall], step_s: float, key: str = "wall_s") -> float:
    return min(1.0, sum(float(c.get(key) or 0.0) for c in calls) / step_s)


def _top(calls: list[ScriptCall]) -> ScriptCall:
    return max(calls, key=lambda c: c["wall_s"])


def _evidence(found: list[ScriptCall], share: float, **extra: object) -> dict[str, object]:
    """What every rule here cites: the calls (callees, the costliest one's caller, calls a step)
    and the estimated share of the step."""
    return {"callees": sorted({c["callee"] for c in found}), "caller": _top(found)["caller"],
            "calls_per_step": sum(c["count"] for c in found), "share_fraction": round(share, 4),
            "upside_basis": "estimated", **extra}


@rule("TD-COMP-048", "compute")
def layer_built_in_step(ev: Evidence) -> Hit | None:
    """The script constructs an `nn.Module` (a layer's `__init__`: parameters allocated and
    initialised) in every profiled step: a layer built inside `forward` or the loop. Besides its
    time, each such layer is new and untrained every step, and its parameters are not the
    optimizer's. Upside, estimated: the constructors' share of the profiled step (the fix builds
    them once)."""
    calls, step_s = ev.script_calls()
    built = every_step((c for c in calls["calls"] if MODULE_INIT.match(c["callee"])))
    if not built:
        return None
    top, share = _top(built), _share(built, step_s)
    layer = top["callee"].removeprefix("torch.nn.modules.").removesuffix(".__init__")
    return Hit(share_severity(share), f"a layer is built in every step: {top['callee']}() called from {top['caller']}",
               share, _evidence(built, share, in_model=top["in_model"]),
               f"{top['caller']} constructs a module ({layer}) {top['count']:.0f} time(s) a step, "
               f"{'inside forward' if top['in_model'] else 'in the loop'}: each construction allocates and "
               "initialises its parameters (reset_parameters, kaiming_uniform_), and the new layer is untrained "
               "every step; the optimizer, built before, never updates it.",
               Fix("Build every layer once, in the module's __init__, and only call it in forward; a layer "
                   "whose size depends on the input can be an nn.LazyLinear (or other Lazy module).",
                   "def __init__(self):\n    super().__init__()\n    self.head = nn.Linear(64, 1000)\n"
                   "def forward(self, x):\n    return self.head(x)   # not nn.Linear(64, 1000)(x)"))


def _setup_kind(callee: str) -> tuple[str, str] | None:
    """What `callee` builds and what rebuilding it every step loses, if it is set-up (SETUP_CALLS)."""
    return next(((built, loss) for pattern, built, loss in SETUP_CALLS if pattern.match(callee)), None)


@rule("TD-COMP-054", "compute")
def setup_in_step(ev: Evidence) -> Hit | None:
    """The script builds, in every profiled step, what a training or inference loop builds once
    before it (SETUP_CALLS): an optimizer, a learning-rate scheduler, a gradient scaler, a DataLoader,
    or a TorchScript module (`torch.jit.trace`/`script`). Besides the time, what it built is thrown
    away each step: an optimizer's state, a schedule's position, a scaler's loss scale. Upside,
    estimated: those calls' share of the profiled step (what the optimizer's first `step()` then
    allocates for its new state is not counted)."""
    calls, step_s = ev.script_calls()
    built = every_step((c for c in calls["calls"] if _setup_kind(c["callee"])))
    if not built:
        return None
    top, share = _top(built), _share(built, step_s)
    what, loss = _setup_kind(top["callee"]) or ("", "")
    return Hit(share_severity(share), f"{what} is built again in every step: {top['callee']}() from {top['caller']}",
               share, _evidence(built, share, built=what),
               f"{top['caller']} builds {what} {top['count']:.0f} time(s) a step ({top['callee']}), work the loop "
               f"needs once: {loss}.",
               Fix("Build it once, before the loop, and reuse it in every step (trace or compile the model once "
                   "and call the result; keep the optimizer, its scheduler and the gradient scaler for the whole "
                   "run, and pass them to the function that runs a step).",
                   "optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)   # once, before the loop\n"
                   "traced = torch.jit.trace(model, example)                  # once\n"
                   "for x, y in loader:\n    train_step(traced, optimizer, x, y)"))


@rule("TD-COMP-049", "compute")
def explicit_inverse(ev: Evidence) -> Hit | None:
    """The script inverts a matrix (`torch.linalg.inv`, `torch.inverse`) in every profiled step,
    most often to multiply by the inverse: solving the system (`torch.linalg.solve`, or
    `torch.cholesky_solve` for a symmetric positive-definite matrix) computes the same product with
    one factorisation and no inverse, faster and more accurate, in the backward too. Upside,
    estimated: the inverse's share of the profiled step (its backward not counted)."""
    calls, step_s = ev.script_calls()
    inverses = every_step((c for c in calls["calls"] if c["callee"] in INVERSES))
    if not inverses:
        return None
    top, share = _top(inverses), _share(inverses, step_s)
    return Hit(share_severity(share), f"a matrix inverse in every step: {top['callee']}() from {top['caller']}, "
               f"{share:.0%} of the step", share,
               _evidence(inverses, share),
               f"{top['caller']} computes an explicit inverse ({top['callee']}) {top['count']:.0f} time(s) a step. "
               "Multiplying by an inverse costs a factorisation, n triangular solves for the inverse's columns "
               "and a matrix product, where solving for the product costs the factorisation and solves for the "
               "right-hand side's columns only; the torch.linalg.inv docs advise linalg.solve.",
               Fix("Solve instead of inverting: torch.linalg.solve(A, B) for inv(A) @ B (torch.cholesky_solve "
                   "with torch.linalg.cholesky for a symmetric positive-definite A, e.g. a kernel matrix).",
                   "x = torch.linalg.solve(A, b)   # was torch.linalg.inv(A) @ b"))


@rule("TD-COMP-050", "compute")
def log_of_softmax(ev: Evidence) -> Hit | None:
    """One function of the script takes the softmax and the log of a tensor in every profiled step
    (`torch.log(F.softmax(x))`, often before `nll_loss`): `F.log_softmax` computes it in one
    operator, and `F.cross_entropy` takes the logits directly; the log and its backward (a
    division of the same size) go, and the result stays finite where a probability underflows to 0.
    Upside, estimated: twice the log's operators' share of the profiled step (the log and its
    backward)."""
    calls, step_s = ev.script_calls()
    every = every_step(calls["calls"])
    softmax_callers = {c["caller"] for c in every if c["callee"] in SOFTMAXES}
    logs = [c for c in every if c["callee"] in LOGS and c["caller"] in softmax_callers]
    if not logs:
        return None
    top = _top(logs)
    share = min(1.0, 2 * _share(logs, step_s, "ops_s"))
    return Hit(share_severity(share), f"the log of a softmax, taken in two operators, in {top['caller']}", share,
               _evidence(logs, share),
               f"{top['caller']} calls a softmax and then {top['callee']}() on it every step: two passes over "
               "the tensor forward and two backward, where log_softmax is one, and a probability that "
               "underflows to 0 makes the log -inf.",
               Fix("Use F.log_softmax(x, dim) (with F.nll_loss), or pass the logits to F.cross_entropy, which "
                   "applies log_softmax itself.",
                   "loss = F.cross_entropy(logits, target)\n"
                   "# was: F.nll_loss(torch.log(F.softmax(logits, -1)), target)"))


@rule("TD-COMP-051", "compute")
def tensors_formatted(ev: Evidence) -> Hit | None:
    """The script formats tensors as text in every profiled step (an f-string or `str()` of a tensor,
    `print(tensor)`, a logging call whose message is built eagerly even when the level is off):
    formatting reads each element with its own operators. Upside, estimated: the formatting calls'
    share of the profiled step, at most the timed steps' share outside the model when they ran
    there."""
    calls, step_s = ev.script_calls()
    formatting = every_step((c for c in calls["calls"] if c["callee"] in FORMATTERS
                                     or (c["callee"] in PRINTERS and float(c.get("ops_s") or 0.0) > 0)))
    if not formatting:
        return None
    top = _top(formatting)
    share = capped_outside(ev, _share(formatting, step_s), top)
    return Hit(share_severity(share), f"tensors formatted as text every step: {top['callee']}() from {top['caller']}",
               share, _evidence(formatting, share),
               f"{top['caller']} turns tensors into strings {sum(c['count'] for c in formatting):.0f} time(s) a step "
               "(print, an f-string, str() or an eager logging message): the tensor's __repr__/__format__ "
               "reads its elements one by one, each an operator (and on a GPU a copy to the host), whether "
               "or not the text is shown.",
               Fix("Format numbers, not tensors, and only when they are shown: log loss.item() every N steps; "
                   "with logging, pass the values as arguments (formatted only if the level is enabled) or guard "
                   "the call with logger.isEnabledFor(...).",
                   "if step % 100 == 0:\n    print(f\"step {step} loss {loss.item():.4f}\")\n"
                   "logger.debug(\"logits %s\", logits)   # lazy: not an f-string"))


@rule("TD-COMP-052", "compute")
def distribution_checks(ev: Evidence) -> Hit | None:
    """The script builds `torch.distributions` objects in every profiled step with argument
    validation on (the default outside `python -O`): their constructors run operators, among them
    the constraint checks' reductions (`aten::all`) from the same function, and `log_prob` checks
    each value's support again. Upside, estimated: the constructors' time in operators as a share
    of the profiled step (the checks in `log_prob` not counted)."""
    calls, step_s = ev.script_calls()
    built = every_step((c for c in calls["calls"] if DISTRIBUTION_INIT.match(c["callee"])
                                and float(c.get("ops_s") or 0.0) > 0))
    checked = {op.get("source") for op in (OP_COSTS.of(ev.record) or {}).get("ops") or []
               if op.get("name") == CHECK_OPERATOR}
    built = [c for c in built if c["caller"] in checked]
    if not built:
        return None
    top, share = _top(built), _share(built, step_s, "ops_s")
    return Hit(share_severity(share), f"torch.distributions validates its arguments every step: {top['callee']}() "
               f"from {top['caller']}", share,
               _evidence(built, share),
               f"{top['caller']} builds {sum(c['count'] for c in built):.0f} distribution(s) a step with "
               "validate_args on: each constructor checks every parameter against its constraint (a comparison "
               "and an all() per argument), and log_prob checks every value's support, many small operators "
               "for arguments that are valid by construction.",
               Fix("Turn the checks off once the code is known to be right: "
                   "torch.distributions.Distribution.set_default_validate_args(False) at start-up, or "
                   "validate_args=False per distribution (or run with python -O).",
                   "torch.distributions.Distribution.set_default_validate_args(False)\n"
                   "dist = torch.distributions.Normal(mu, sigma, validate_args=False)"))


@rule("TD-COMP-053", "compute")
def parameter_loop(ev: Evidence) -> Hit | None:
    """One function of the script iterates the model's parameters (`parameters()`,
    `named_parameters()`) and calls a penalty's operator on each (`pow`, `abs`, `norm`, `square` on
    the Parameter) PARAMETER_LOOP times or more a step, outside the model
    (`sum(p.pow(2).sum() for p in model.parameters())`): an L2 or L1 penalty, or a norm, computed by
    a Python loop of small operators, forward and backward, for every parameter. An L2 penalty is
    the optimizer's `weight_decay`, applied in its own fused or foreach update; other statistics
    take all parameters at once (`torch._foreach_norm`, `torch.nn.utils.get_total_norm`). Upside,
    estimated: the loop's share of the profiled step (its backward not counted)."""
    calls, step_s = ev.script_calls()
    every = every_step(calls["calls"])
    iterating = {c["caller"] for c in every if c["callee"] in PARAMETER_ITERATORS and c["count"] >= PARAMETER_LOOP}
    per_caller: dict[str, list[ScriptCall]] = {}
    for call in every:
        if call["callee"] in PENALTY_METHODS and call["caller"] in iterating and not call["in_model"]:
            per_caller.setdefault(call["caller"], []).append(call)
    loops = {caller: found for caller, found in per_caller.items()
             if sum(c["count"] for c in found) >= PARAMETER_LOOP}
    if not loops:
        return None
    caller, found = max(loops.items(), key=lambda item: sum(c["wall_s"] for c in item[1]))
    top = _top(found)
    share = capped_outside(ev, max(share_of_step(calls, step_s, top), _share(found, step_s)), top)
    methods = sorted({c["callee"].removeprefix("Parameter.") for c in found})
    return Hit(share_severity(share), f"a loop over the parameters every step: {', '.join(methods)} on each one in "
               f"{caller}", share,
               _evidence(found, share, methods=methods),
               f"{caller} calls {', '.join(methods)} on the parameters {sum(c['count'] for c in found):.0f} times a "
               "step: a penalty or a norm over the model computed one parameter at a time, two or more small "
               "operators per parameter forward and as many backward.",
               Fix("For an L2 penalty (weight decay), drop the loop and give the optimizer weight_decay "
                   "(AdamW decouples it from the adaptive step); for a norm or another statistic over all "
                   "parameters, compute it at once with torch._foreach_norm or torch.nn.utils.get_total_norm.",
                   "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)\n"
                   "# was: loss = loss + 1e-2 * sum(p.pow(2).sum() for p in model.parameters())"))


@rule("TD-COMP-061", "compute")
def parametrization_recomputed(ev: Evidence) -> Hit | None:
    """A function of the script reads a parametrized tensor (`torch.nn.utils.parametrize`,
    `parametrizations.orthogonal`, `weight_norm`, `spectral_norm`) REREADS times or more per forward,
    outside `parametrize.cached()`: every read recomputes the parametrization (a matrix exponential,
    a QR, a norm) and adds its nodes to the backward. Upside, estimated: the reads' operators' share
    of the profiled step x (1 - 1/reads per forward): with the cache, one computation per forward;
    reported from CACHED_READS. Under `cached()` the reads after the first run no operators, but the
    probe's totals cannot tell one costly computation from many cheap ones: a cached parametrization
    whose single computation takes CACHED_READS of the step or more is reported too (a limit)."""
    calls, step_s = ev.script_calls()
    forwards = max(1.0, calls["forwards"])
    reads = [c for c in calls["calls"] if c["callee"] in PARAMETRIZED and c["count"] / forwards >= REREADS
             and not c.get("in_loading")]
    if not reads:
        return None
    top = max(reads, key=lambda c: c["wall_s"])
    per_forward = top["count"] / forwards
    share = min(1.0, float(top.get("ops_s") or 0.0) / step_s * (1 - 1 / per_forward))
    if share < CACHED_READS:
        return None  # reads whose operators cost this little: cached ones, or a cheap parametrization
    return Hit(share_severity(share), f"a parametrized weight recomputed {per_forward:.0f} times a forward in "
               f"{top['caller']}", share,
               {"caller": top["caller"], "reads_per_forward": round(per_forward, 1),
                "share_fraction": round(share, 4), "upside_basis": "estimated"},
               f"{top['caller']} reads a parametrized tensor {per_forward:.0f} times per forward (a weight used "
               "inside a loop over time steps, or by several layers): each read recomputes the parametrization "
               "from its original, forward and backward, because nothing caches it between reads.",
               Fix("Compute it once per forward: wrap the forward (or the loop) in "
                   "torch.nn.utils.parametrize.cached(), or read the weight once into a local before the loop.",
                   "with torch.nn.utils.parametrize.cached():\n    out = model(x)\n"
                   "# or, in forward: w = self.rec.weight   # once, then use w in the loop"))
