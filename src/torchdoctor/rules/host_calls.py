"""Rules on what the script's own code called in a profiled step (the operator-costs probe's
`script_calls`, observe/probes/script_calls.py): calls counted per step, with the script's function
that made them.

Counts are what these rules rest on: a count does not change with the machine's load, where a time
does. The time the calls took in the profiled step (the Python tracer's, which slows Python code
more than the operators) sizes the upside only, as a share of that same profiled step.

Sources: PyTorch's performance tuning guide ("avoid unnecessary CPU-GPU synchronisation": `.item()`
per value), the `torch.autograd.grad` docs (`is_grads_batched`) and `torch.func.jacrev`/`vmap`
(Jacobians in one call), the `torch.vmap` docs (a function applied per sample, batched).
"""

from __future__ import annotations

import statistics
from typing import Iterable

from torchdoctor.probe_values import ScriptCall, ScriptCallsValue
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.outside import BACKWARD_CALLS, SCALAR_READS, share_of_step

TENSOR_ITER = "torch._tensor.__iter__"
MANY_READS = 32  # scalar reads a step from one function: a loop over elements, not a logged loss
MANY_PASSES = 4  # backward passes a step from one function, and per forward of the model
MODULE = "nn.Module: "
MIN_BATCH = 8  # a batch this large before a call count equal to it says "once per sample"
SHARE_WARNING, SHARE_PROBLEM = 0.05, 0.20

GRADIENTS_AT_ONCE = Fix("Take the gradients in one call: batch the grad_outputs with is_grads_batched=True, or "
                        "use torch.func.jacrev / torch.func.vmap, instead of one torch.autograd.grad call (or "
                        "backward pass) per output.",
                        "basis = torch.eye(n).unsqueeze(1).expand(n, *y.shape)\n"
                        "(jac,) = torch.autograd.grad(y, x, grad_outputs=basis, is_grads_batched=True, "
                        "create_graph=True)\n# or: torch.func.jacrev(f)(x)")


def every_step(calls: Iterable[ScriptCall]) -> list[ScriptCall]:
    """The calls made at least once in every profiled step, outside the DataLoader's fetch (whose
    time is the data wait's)."""
    return [c for c in calls if c["count"] >= 1 and not c.get("in_loading")]


def share_severity(share: float) -> str:
    """A script-call finding's severity by its share of the step: a warning from SHARE_WARNING, a
    problem from SHARE_PROBLEM, info below."""
    return severity_at(share, SHARE_WARNING, SHARE_PROBLEM) or "info"


def capped_outside(ev: Evidence, share: float, call: ScriptCall) -> float:
    """`share`, at most the timed steps' share outside the model, backward and optimizer when the
    calls ran there (the profiled step's Python is slowed by the tracer; the timed steps are not)."""
    if call["in_model"]:
        return share
    try:
        return min(share, ev.summary("other_fraction"))
    except MissingEvidence:
        return share


def _where(call: ScriptCall) -> str:
    return "inside the model's forward" if call["in_model"] else "outside the model"


def _element_loop(calls: ScriptCallsValue, top: ScriptCall) -> list[ScriptCall]:
    """The calls of the loop that makes `top`'s reads, besides the reads: the calls that ran its
    frame (the `sum(...)` consuming a generator) and the tensor iterations (`Tensor.__iter__`, one
    tensor per element) made by the frame that called them."""
    drivers = [c for c in calls["calls"] if c.get("drives") == top["caller"]]
    outer = {c["caller"] for c in drivers}
    return drivers + [c for c in calls["calls"] if c["callee"] == TENSOR_ITER and c["caller"] in outer]


def _element_loop_share(calls: ScriptCallsValue, step_s: float, top: ScriptCall) -> float:
    """Share of the profiled step in the loop that makes `top`'s reads: its own frame when it is a
    function or generator of its own (`share_of_step`), plus the loop's other calls (`_element_loop`)."""
    extra = sum(c["wall_s"] for c in _element_loop(calls, top))
    return min(1.0, share_of_step(calls, step_s, top) + extra / step_s)


@rule("TD-COMP-034", "compute")
def scalar_reads_per_element(ev: Evidence) -> Hit | None:
    """One function of the script reads MANY_READS or more tensor elements a step into Python
    numbers (`.item()`, `float(t)`, ...): a Python loop over a tensor's elements. Each read is a
    dispatch and, on a GPU, a sync. Upside: the profiled step's share in that loop
    (`_element_loop_share`), at most the timed share outside the model when it runs there."""
    calls, step_s = ev.script_calls()
    reads: dict[str, ScriptCall] = {}
    for call in calls["calls"]:
        if call["callee"] in SCALAR_READS:
            seen = reads.get(call["caller"])
            reads[call["caller"]] = call if seen is None else {
                **seen, "count": seen["count"] + call["count"], "wall_s": seen["wall_s"] + call["wall_s"]}
    if not reads:
        return None
    top = max(reads.values(), key=lambda c: c["count"])
    if top["count"] < MANY_READS:
        return None
    loops = [r for r in reads.values() if r["count"] >= MANY_READS]
    share = capped_outside(ev, sum(_element_loop_share(calls, step_s, r) for r in loops), top)
    return Hit(share_severity(share),
               f"{top['count']:.0f} tensor elements read one by one into Python each step, in {top['caller']}",
               share, {"scalar_reads_per_step": top["count"], "caller": top["caller"], "in_model": top["in_model"],
                       "reading_loops": {r["caller"]: r["count"] for r in loops},
                       "loop_calls": [{"callee": c["callee"], "caller": c["caller"]}
                                      for r in loops for c in [r, *_element_loop(calls, r)]],
                       "share_fraction": round(share, 4), "profiled_step_s": round(step_s, 6)},
               f"{top['caller']} calls .item() (or float()/int()/bool() on a tensor) {top['count']:.0f} times a "
               f"step, {_where(top)}: a Python loop over a tensor's elements. Each read dispatches an operator and "
               "returns one number; on a GPU each one also waits for the device.",
               Fix("Vectorise: compute the statistic with tensor operations and read one number per step (or keep "
                   "it as a tensor and read it every N steps); to get many values, read them at once with "
                   ".tolist().",
                   "correct += (pred == y).sum().item()          # one read, not one per element\n"
                   "losses.extend(per_sample.detach().tolist())  # all values in one call"))


def _backward_caller(calls: ScriptCallsValue) -> ScriptCall | None:
    """The function making the most backward passes a step (its calls of every backward kind)."""
    per_caller: dict[str, ScriptCall] = {}
    for call in calls["calls"]:
        if call["callee"] in BACKWARD_CALLS:
            seen = per_caller.get(call["caller"])
            per_caller[call["caller"]] = call if seen is None else {
                **seen, "count": seen["count"] + call["count"], "wall_s": seen["wall_s"] + call["wall_s"]}
    return max(per_caller.values(), key=lambda c: c["count"], default=None)


@rule("TD-COMP-035", "compute")
def repeated_backward_passes(ev: Evidence) -> Hit | None:
    """One function runs the autograd engine MANY_PASSES times or more a step (`torch.autograd.grad`
    or `backward()` in a loop), and the step runs it at least twice per forward of the model:
    gradients of one graph taken row by row (a Jacobian, a per-output penalty), not gradient
    accumulation (one backward per forward). Upside, estimated: the calls' share of the profiled
    step times (1 - 1/calls), what one batched call wins where each pass is mostly per-call
    overhead (small operators); a pass bound by large matrix products wins less."""
    calls, step_s = ev.script_calls()
    top = _backward_caller(calls)
    passes, forwards = calls["backward_passes"], max(1.0, calls["forwards"])
    if top is None or top["count"] < MANY_PASSES or passes < 2 * forwards:
        return None
    count = top["count"]
    share = min(1.0, top["wall_s"] / step_s) * (1 - 1 / count)
    return Hit(share_severity(share),
               f"{count:.0f} backward passes a step from {top['caller']} for {forwards:.0f} forward(s)", share,
               {"backward_passes_per_step": passes, "caller_passes_per_step": count, "forwards_per_step": forwards,
                "caller": top["caller"], "calls_share_fraction": round(top["wall_s"] / step_s, 4),
                "upside_basis": "estimated"},
               f"{top['caller']} runs the autograd engine {count:.0f} times a step for {forwards:.0f} forward(s) of "
               "the model: each call walks the whole graph again for one output (or one row of a Jacobian), "
               "paying every backward operator's dispatch each time.",
               GRADIENTS_AT_ONCE)


def median_batch(ev: Evidence) -> int:
    return int(statistics.median(ev.batch_sizes()))


@rule("TD-COMP-036", "compute")
def module_per_sample(ev: Evidence) -> Hit | None:
    """Inside the model's forward, one function calls a submodule once per sample: its calls a step
    are a multiple of the batch size (MIN_BATCH or more), so the layers run on one sample at a time
    and the backward replays each small graph. Upside, estimated: the calls' share of the profiled
    step times (1 - 1/calls), what one call on the whole batch wins where the small calls are
    mostly per-call overhead."""
    calls, step_s = ev.script_calls()
    batch = median_batch(ev)
    if batch < MIN_BATCH:
        return None
    looped = [c for c in calls["calls"] if c["callee"].startswith(MODULE) and c["in_model"]
              and c["count"] >= batch and round(c["count"]) % batch == 0]
    if not looped:
        return None
    top = max(looped, key=lambda c: c["wall_s"])
    count, module = top["count"], top["callee"].removeprefix(MODULE)
    share = min(1.0, top["wall_s"] / step_s) * (1 - 1 / count)
    return Hit(share_severity(share),
               f"{module} is called once per sample ({count:.0f} calls a step, batch {batch}) in {top['caller']}",
               share, {"module": module, "calls_per_step": count, "batch_size_median": batch, "caller": top["caller"],
                       "calls_share_fraction": round(top["wall_s"] / step_s, 4), "upside_basis": "estimated"},
               f"{top['caller']} calls {module} {count:.0f} times a step for batches of {batch}: a Python loop over "
               "the samples. Each call runs every layer on one sample, and the backward runs as many small graphs.",
               Fix("Apply the module to the whole batch at once (its layers take a batch dimension); where a "
                   "per-sample function is unavoidable, batch it with torch.vmap.",
                   "return self.net(x)   # not torch.stack([self.net(s) for s in x])\n"
                   "# per-sample logic: torch.vmap(per_sample_fn)(x)"))
