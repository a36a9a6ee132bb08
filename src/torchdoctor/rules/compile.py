"""torch.compile rules (issue 7 item 3), over the compile report in `record.compile`
(docs/compile.md). Whether a piece of evidence calls for a fix is decided once, in
`torchdoctor.compile.advice` (the `compile` command shows the same advice); these rules add the
measured share, the severity and the ranking.

Sources: torch.compile troubleshooting docs (graph breaks, recompilations and `dynamic=True`,
compile-time caching), the guides' "measure first" loop.
"""

from __future__ import annotations

import math
from pathlib import Path

from torchdoctor.compile import advice
from torchdoctor.rules.base import Fix, Hit, MissingEvidence, rule, severity_at
from torchdoctor.rules.evidence import Evidence

SLOWER_WARNING, SLOWER_PROBLEM = 0.02, 0.10  # share of the compiled step lost against eager


def _shape_recompile_s(ev: Evidence) -> float:
    frames = ev.record.compile.get("frames") or []
    return sum(f.get("compile_time_s") or 0.0 for f in frames if "size mismatch" in (f.get("recompile_reason") or ""))


@rule("TD-COMP-021", "compute")
def shape_recompiles(ev: Evidence) -> Hit | None:
    """Dynamo recompiles because input shapes change (guards failing on a size). Upside: the compile
    time of those recompilations against the timed window (recompile_s / (recompile_s + window_s))."""
    found = advice.shape_recompiles({"recompiles": ev.compile_fact("recompiles"),
                                     "recompile_limit_hit": ev.record.compile.get("recompile_limit_hit")})
    if not found:
        return None
    recompile_s, window_s = _shape_recompile_s(ev), ev.summary("window_s")
    share = recompile_s / (recompile_s + window_s) if recompile_s + window_s > 0 else 0.0
    limit = ev.record.compile.get("recompile_limit_hit")
    severity = "problem" if limit else (severity_at(share, 0.05, 0.2) or "warning")
    shapes = [r for r in ev.record.compile["recompiles"] if "size mismatch" in (r.get("guard") or "")]
    return Hit(severity, found[0].message, share,
               {"shape_recompiles_count": len(shapes), "recompile_s": round(recompile_s, 3),
                "window_s": round(window_s, 3), "recompile_limit_hit": limit, "guard": shapes[0]["guard"]},
               "Each new input shape fails a size guard and compiles the graph again; past the recompile limit "
               "the function runs eagerly.", Fix(found[0].fix.capitalize() + ".",
                                                  "model = torch.compile(model, dynamic=True)\n"
                                                  "# or: torch._dynamo.mark_dynamic(x, 1) on the varying dimension"))


@rule("TD-COMP-022", "compute")
def graph_breaks(ev: Evidence) -> Hit | None:
    """Graph breaks in the compiled code that runs every step, each with its file:line and the usual
    fix for its reason. Their cost is not measured here (upside 0): `torchdoctor compile` compares
    against eager."""
    found = advice.graph_breaks({"graph_breaks": ev.compile_fact("graph_breaks")})
    if not found:
        return None
    breaks = ev.record.compile["graph_breaks"]
    where = [f"{Path(b['filename']).name}:{b['lineno']}" for b in breaks]
    return Hit("warning", f"{len(breaks)} graph break(s) in compiled code, first at {where[0]}", 0.0,
               {"graph_break_count": ev.record.compile.get("graph_break_count"),
                "graph_breaks": [{"at": w, "reason": b["reason"], "fix": a.fix}
                                 for w, b, a in zip(where, breaks, found)]},
               "Each break ends a graph: the code around it runs in Python, and the compiler cannot fuse across it.",
               Fix(f"At {where[0]}: {found[0].fix}.",
                   "@torch.compiler.disable\ndef log_stats(x): ...   # keep unavoidable Python out of the graph"))


def _comparison(ev: Evidence) -> dict:
    """`record.compile.comparison`: the eager-vs-compiled comparison of `torchdoctor compile`."""
    return ev.compile_fact("comparison")


@rule("TD-COMP-023", "compute")
def slower_after_compile(ev: Evidence) -> Hit | None:
    """Compiled steps are measurably slower than eager (benchmark verdict "slower"). Upside: the share
    of the compiled step lost against eager, 1 - 1/ratio."""
    comparison = _comparison(ev)
    found = [a for a in advice.speed(comparison, None) if a.code == "compile.slower"]
    if not found:
        return None
    ratio = comparison["verdict"]["ratio"]
    share = 1 - 1 / ratio
    return Hit(severity_at(share, SLOWER_WARNING, SLOWER_PROBLEM) or "info", found[0].message, share,
               {"ratio": round(ratio, 4), "eager_step_s": comparison.get("eager_step_s"),
                "compiled_step_s": comparison.get("compiled_step_s")},
               "Graph breaks, recompilations and guard checks can cost more than fusion wins, "
               "especially for small models.", Fix(found[0].fix.capitalize() + ".", "model = model  # not compiled"))


def _steps_per_epoch(ev: Evidence) -> int:
    loader = ev.dataloader()
    if not loader.get("dataset_len") or not loader.get("batch_size"):
        raise MissingEvidence("the DataLoader's length (steps per epoch)")
    return math.ceil(loader["dataset_len"] / loader["batch_size"])


@rule("TD-COMP-024", "compute")
def compile_not_repaid(ev: Evidence) -> Hit | None:
    """Compilation takes longer than it saves within one epoch of the script's DataLoader (payoff
    steps from the eager-vs-compiled comparison). Upside: the compile time not repaid, as a share
    of the epoch (compile + compiled steps)."""
    comparison, steps = _comparison(ev), _steps_per_epoch(ev)
    found = [a for a in advice.speed(comparison, steps) if a.code == "compile.not_repaid"]
    if not found:
        return None
    compile_s, compiled_s, eager_s = (comparison["compile_time_s"], comparison["compiled_step_s"],
                                      comparison["eager_step_s"])
    lost_s = compile_s - steps * max(0.0, eager_s - compiled_s)
    share = max(0.0, lost_s) / (compile_s + steps * compiled_s)
    return Hit(severity_at(share, 0.05, 0.2) or "info", found[0].message, share,
               {"compile_time_s": compile_s, "payoff_steps": comparison.get("payoff_steps"),
                "steps_per_epoch": steps},
               "Compilation is paid once per process; it pays back only over many steps.",
               Fix(found[0].fix.capitalize() + ".",
                   "export TORCHINDUCTOR_FX_GRAPH_CACHE=1   # reuse compiled graphs across runs"))
