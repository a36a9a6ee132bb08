"""Rules on how the script calls its modules in a profiled step (the operator-costs probe's
`script_calls`, observe/probes/script_calls.py): a submodule called many times per forward from a
Python loop, and a model built, copied or loaded anew every step.

Counts are what these rules rest on, as in rules/host_calls.py: a count does not change with the
machine's load. The calls' time in the profiled step (the Python tracer slows Python code more than
the operators) sizes the upside only, as a share of that same profiled step.

Sources: PyTorch docs `torch.nn.GRU`/`nn.LSTM` (the fused recurrent layers), `torch.bmm` and
`torch.einsum` (batched matrix products), `torch.func.stack_module_state` ("Model ensembling":
many copies of one module run as one batched call), `torch.compile`; `copy.deepcopy` and
`torch.load` are set-up work ("Saving and loading models": load once, then call the model).
"""

from __future__ import annotations

from torchdoctor.probe_values import ScriptCall, ScriptCallsValue
from torchdoctor.rules.base import Fix, Hit, rule
from torchdoctor.rules.evidence import Evidence
from torchdoctor.rules.host_calls import MIN_BATCH, MODULE, capped_outside, median_batch, share_severity

MANY_CALLS = 16  # calls of one submodule per forward from one function: a loop, not a few layers
REPORTED = 0.05
#: Calls that build a module's parameters anew or fill them from a file: a model made, copied or
#: loaded. Module constructors are `torch.nn.modules.<file>.__init__`.
_COPY, _LOAD = "copy.deepcopy", ("torch.serialization.load", "torch.nn.modules.module.load_state_dict")
_CONSTRUCTOR_PREFIX, _CONSTRUCTOR_SUFFIX = "torch.nn.modules.", ".__init__"

LOOP_FIX = Fix("Run the loop's calls as one: parallel branches of one shape (heads, experts, ensemble members) "
               "as one weight of shape (branches, out, in) applied with torch.bmm or torch.einsum (or "
               "torch.func.stack_module_state with torch.vmap); a recurrence over time steps with the fused "
               "nn.GRU / nn.LSTM / nn.RNN layers; where neither fits, torch.compile the forward so the loop's "
               "small operators fuse.",
               "w = nn.Parameter(torch.randn(heads, d_out, d_in))     # not nn.ModuleList of Linear\n"
               "y = torch.einsum('bhi,hoi->bho', x.view(b, heads, d_in), w)\n"
               "# a hand-written recurrent cell stepped in Python: nn.GRU(d_in, d_hidden, batch_first=True)")
REBUILT_FIX = Fix("Build, copy or load the model once, before the loop, and reuse it: keep a snapshot or EMA "
                  "module made once and refresh its weights in place (p_copy.copy_(p) under torch.no_grad()); "
                  "load a checkpoint once at start-up and keep the model in memory.",
                  "snapshot = copy.deepcopy(model).requires_grad_(False)   # once, before the loop\n"
                  "with torch.no_grad():                                  # every step\n"
                  "    for p_snap, p in zip(snapshot.parameters(), model.parameters()):\n"
                  "        p_snap.copy_(p)")


def _looped_modules(calls: ScriptCallsValue, batch: int) -> list[ScriptCall]:
    """Submodule calls inside the model's forward made MANY_CALLS times or more per forward by one
    function, but not a multiple of a batch of MIN_BATCH or more (once per sample: TD-COMP-036)."""
    forwards = max(1.0, calls["forwards"])
    per_sample = batch >= MIN_BATCH
    return [c for c in calls["calls"] if c["callee"].startswith(MODULE) and c["in_model"]
            and c["count"] / forwards >= MANY_CALLS
            and not (per_sample and c["count"] >= batch and round(c["count"]) % batch == 0)]


@rule("TD-COMP-044", "compute")
def module_in_python_loop(ev: Evidence) -> Hit | None:
    """Inside the model's forward, one function calls a submodule MANY_CALLS times or more per
    forward (per-head layers of a ModuleList, a hand-written recurrent cell stepped over time): each
    call dispatches its own small operators and adds its own autograd nodes. Upside, estimated: the
    calls' share of the profiled step x (1 - 1/calls), what one batched or fused call wins where
    the small calls are mostly per-call overhead; reported from REPORTED."""
    calls, step_s = ev.script_calls()
    looped = _looped_modules(calls, median_batch(ev))
    if not looped:
        return None
    top = max(looped, key=lambda c: c["wall_s"])
    per_forward, module = top["count"] / max(1.0, calls["forwards"]), top["callee"].removeprefix(MODULE)
    share = min(1.0, top["wall_s"] / step_s) * (1 - 1 / top["count"])
    if share < REPORTED:
        return None
    return Hit(share_severity(share),
               f"{module} is called {per_forward:.0f} times per forward from a Python loop in {top['caller']}",
               share, {"module": module, "calls_per_forward": per_forward, "calls_per_step": top["count"],
                       "caller": top["caller"], "calls_share_fraction": round(top["wall_s"] / step_s, 4),
                       "upside_basis": "estimated"},
               f"{top['caller']} calls {module} {per_forward:.0f} times per forward of the model: a Python loop "
               "over heads, branches or time steps. Each call runs its own small operators and adds its own "
               "autograd nodes, so the step pays the per-call dispatch many times forward and again backward.",
               LOOP_FIX)


def _rebuilding(call: ScriptCall) -> str | None:
    """What the call does to a model: 'copies', 'loads', 'builds', or None."""
    callee = call["callee"]
    if callee == _COPY:
        return "copies"
    if callee in _LOAD:
        return "loads"
    if callee.startswith(_CONSTRUCTOR_PREFIX) and callee.endswith(_CONSTRUCTOR_SUFFIX):
        return "builds"
    return None


@rule("TD-COMP-045", "compute")
def model_rebuilt_every_step(ev: Evidence) -> Hit | None:
    """Every profiled step, the script copies a model (`copy.deepcopy`), constructs modules or loads
    a checkpoint (`torch.load`, `load_state_dict`) outside the model's forward: set-up work that
    allocates and fills every parameter again each step. Upside: those calls' share of the profiled
    step (all of it is won by doing it once), at most the timed share outside the model;
    reported from REPORTED."""
    calls, step_s = ev.script_calls()
    found = [(c, kind) for c in calls["calls"] if not c["in_model"] and (kind := _rebuilding(c))]
    if not found:
        return None
    top, kind = max(found, key=lambda ck: ck[0]["wall_s"])
    share = capped_outside(ev, min(1.0, sum(c["wall_s"] for c, _ in found) / step_s), top)
    if share < REPORTED:
        return None
    kinds = sorted({k for _, k in found})
    callee = top["callee"].removesuffix(_CONSTRUCTOR_SUFFIX) if kind == "builds" else top["callee"]
    return Hit(share_severity(share),
               f"the model is rebuilt every step: {top['caller']} {kind} it ({callee}(), "
               f"{top['count']:.0f} call(s) a step)", share,
               {"caller": top["caller"], "callee": top["callee"], "what": kinds,
                "calls": [{"callee": c["callee"], "caller": c["caller"], "count": c["count"]} for c, _ in found],
                "share_fraction": round(share, 4), "profiled_step_s": round(step_s, 6)},
               f"Each step {', '.join(kinds)} a model ({callee}() from {top['caller']}): a deep copy, a "
               "constructor or a checkpoint load allocates every parameter again and walks every submodule "
               "in Python, work that gives the same model each time.",
               REBUILT_FIX)
