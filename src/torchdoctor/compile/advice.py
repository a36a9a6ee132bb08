"""torch.compile findings from a compile report and an eager-vs-compiled comparison.

Each function returns a :class:`~torchdoctor.finding.Finding` (or None when its evidence is absent)
with the id of the diagnosis rule that reports the same problem on a Record (TD-COMP-021..024,
`torchdoctor.rules.compile`, thresholds in docs/rules.md): the `compile` command reports them from its
report and comparison; the rules pass what only a Record has (the timed window, the epoch length).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.report import CompileReport, Recompile
from torchdoctor.finding import Finding, Fix, new_finding, severity_at

SHAPE_RECOMPILES, GRAPH_BREAKS, SLOWER, NOT_REPAID = "TD-COMP-021", "TD-COMP-022", "TD-COMP-023", "TD-COMP-024"
LAYER = "compute"
#: Share of the compiled step lost against eager (1 - 1/ratio) for a warning / a problem.
SLOWER_WARNING, SLOWER_PROBLEM = 0.02, 0.10
#: Share of the timed window spent recompiling for shape changes (TD-COMP-021), and share of the
#: epoch spent on compile time not repaid (TD-COMP-024), for a warning / a problem.
SHARE_WARNING, SHARE_PROBLEM = 0.05, 0.2

#: (substring of a graph-break reason, the usual fix), first match wins.
BREAK_FIXES = (
    (".item()", "keep the value a tensor (or set torch._dynamo.config.capture_scalar_outputs = True); "
                "move logging of scalars out of the compiled code"),
    ("builtin operator", "move print/logging calls out of the compiled function"),
    ("data-dependent", "move the data-dependent branch out, or express it with torch.cond"),
    ("generic_jump", "move the data-dependent branch out, or express it with torch.cond"),
)
DEFAULT_BREAK_FIX = "wrap the offending submodule in torch.compiler.disable, or move the call out of forward"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def break_fix(reason: str) -> str:
    """The usual fix for a graph break with this reason."""
    return next((fix for key, fix in BREAK_FIXES if key in reason), DEFAULT_BREAK_FIX)


def graph_breaks(report: CompileReport) -> Finding | None:
    """TD-COMP-022: graph breaks, each with its file:line and the usual fix for its reason. Their cost
    is not measured from a report (upside 0): the eager-vs-compiled comparison measures it."""
    breaks = report.graph_breaks
    if not breaks:
        return None
    where = [f"{Path(b.filename).name}:{b.lineno}" for b in breaks]
    fixes = [break_fix(b.reason) for b in breaks]
    return new_finding(
        GRAPH_BREAKS, LAYER, "warning", f"{len(breaks)} graph break(s) in compiled code, first at {where[0]}", 0.0,
        {"graph_break_count": report.graph_break_count,
         "graph_breaks": [{"at": w, "reason": b.reason, "fix": f} for w, b, f in zip(where, breaks, fixes)]},
        "Each break ends a graph: the code around it runs in Python, and the compiler cannot fuse across it.",
        Fix(f"At {where[0]}: {fixes[0]}.",
            "@torch.compiler.disable\ndef log_stats(x): ...   # keep unavoidable Python out of the graph"))


def shape_recompiles(report: CompileReport, window_s: float | None = None) -> Finding | None:
    """TD-COMP-021: Dynamo recompiles because input shapes change. Upside: the compile time of those
    recompilations against the timed window, recompile_s / (recompile_s + window_s); 0 without
    `window_s`. A problem when the recompile limit was hit."""
    shapes = report.shape_guards()
    if not shapes:
        return None
    limit = report.recompile_limit_hit
    recompile_s = sum(f.compile_time_s or 0.0 for f in report.frames
                      if "size mismatch" in (f.recompile_reason or ""))
    total_s = recompile_s + (window_s or 0.0)
    share = recompile_s / total_s if window_s is not None and total_s > 0 else 0.0
    severity = "problem" if limit else (severity_at(share, SHARE_WARNING, SHARE_PROBLEM) or "warning")
    note = " and hit the recompile limit (later calls run eagerly)" if limit else ""
    return new_finding(
        SHAPE_RECOMPILES, LAYER, severity,
        f"{len(shapes)} recompilations because input shapes changed{note}, e.g. {shapes[0].guard}", share,
        {"shape_recompiles_count": len(shapes), "recompile_s": round(recompile_s, 3),
         "window_s": round(window_s, 3) if window_s is not None else None,
         "recompile_limit_hit": None if limit is None else {"config": limit.config, "limit": limit.limit},
         "guard": shapes[0].guard},
        "Each new input shape fails a size guard and compiles the graph again; past the recompile limit "
        "the function runs eagerly.",
        Fix(_sentence("compile with dynamic=True, or pad/bucket inputs to a few fixed shapes"),
            "model = torch.compile(model, dynamic=True)\n"
            "# or: torch._dynamo.mark_dynamic(x, 1) on the varying dimension"))


def _where(filename: str | None, lineno: int | None) -> str:
    return f"{Path(filename or '?').name}:{lineno}"


def slower_cause(report: CompileReport | None, comparison: Comparison) -> tuple[str, Fix, dict[str, Any]]:
    """The measured cause of slower compiled steps, most specific first: a graph break (its line
    and reason), recompilations for changing shapes, else the compiled code's own overhead on a
    small step. A recompile for another reason (a global state such as grad_mode, from an
    evaluation under no_grad) happens outside the steady state: compile time, not step time."""
    report = report or CompileReport()
    breaks = report.graph_breaks
    shapes = report.shape_guards()
    others: list[Recompile] = [r for r in report.recompiles if r not in shapes]
    evidence: dict[str, Any] = {}
    if others:
        r = others[0]
        evidence["recompile_outside_steady_state"] = {"guard": r.guard, "function": r.function,
                                                      "at": _where(r.filename, r.lineno)}
    if breaks:
        b = breaks[0]
        evidence["cause"] = "graph_break"
        return (f"the graph break at {_where(b.filename, b.lineno)} ({b.reason})",
                Fix(f"At {_where(b.filename, b.lineno)}: {break_fix(b.reason)}.",
                    "@torch.compiler.disable\ndef log_stats(x): ...   # keep unavoidable Python out of the graph"),
                evidence)
    if shapes:
        evidence["cause"] = "shape_recompiles"
        return (f"{len(shapes)} recompilations for changing input shapes ({shapes[0].guard})",
                Fix(_sentence("compile with dynamic=True, or pad/bucket inputs to a few fixed shapes"),
                    "model = torch.compile(model, dynamic=True)"), evidence)
    evidence["cause"] = "overhead"
    eager_s = comparison.eager_step_s
    step = f"a {eager_s * 1e3:.2f} ms eager step" if eager_s else "this step"
    note = ""
    if others:
        r = others[0]
        note = (f"; the one recompile ({r.guard}, in {r.function} at {_where(r.filename, r.lineno)}: a call under another "
                "global state, such as an evaluation under no_grad) is outside the steady state and costs compile "
                "time, not step time")
    return (f"no graph break: on {step} the compiled code's per-call overhead (guards, graph dispatch) outweighs "
            f"what fusion saves{note}",
            Fix("Do not compile this model: it is too small for compilation to pay; compile larger models or "
                "batches.", "model = model  # not compiled"), evidence)


def slower(comparison: Comparison | None, report: CompileReport | None = None) -> Finding | None:
    """TD-COMP-023: compiled steps measurably slower than eager (benchmark verdict "slower"), with the
    measured cause (`slower_cause`). Upside: the share of the compiled step lost against eager,
    1 - 1/ratio."""
    if comparison is None or comparison.verdict.verdict != "slower" or comparison.verdict.ratio is None:
        return None
    ratio = comparison.verdict.ratio
    share = 1 - 1 / ratio
    cause, fix, cause_evidence = slower_cause(report, comparison)
    return new_finding(
        SLOWER, LAYER, severity_at(share, SLOWER_WARNING, SLOWER_PROBLEM) or "info",
        f"compiled steps are slower than eager (ratio {ratio:.2f})", share,
        {"ratio": round(ratio, 4), "eager_step_s": comparison.eager_step_s,
         "compiled_step_s": comparison.compiled_step_s, **cause_evidence},
        _sentence(f"Measured cause: {cause}"), fix)


def not_repaid(comparison: Comparison | None, run_steps: int | None) -> Finding | None:
    """TD-COMP-024: compilation not repaid within `run_steps` steps (the job's length; the rule passes one
    epoch of the script's DataLoader). Upside: the compile time not repaid, as a share of those
    steps run compiled plus the compile time."""
    if comparison is None or not run_steps:
        return None
    payoff, compile_s = comparison.payoff_steps, comparison.compile_time_s
    compiled_s, eager_s = comparison.compiled_step_s, comparison.eager_step_s
    if not compile_s or (payoff is not None and payoff <= run_steps) or compiled_s is None or eager_s is None:
        return None
    lost_s = compile_s - run_steps * max(0.0, eager_s - compiled_s)
    share = max(0.0, lost_s) / (compile_s + run_steps * compiled_s)
    repaid = f"repaid after ~{payoff:.0f} steps" if payoff else "never repaid"
    return new_finding(
        NOT_REPAID, LAYER, severity_at(share, SHARE_WARNING, SHARE_PROBLEM) or "info",
        f"{compile_s:.1f} s of compilation is {repaid}; the run has {run_steps} steps", share,
        {"compile_time_s": compile_s, "payoff_steps": payoff, "steps_per_epoch": run_steps},
        "Compilation is paid once per process; it pays back only over many steps.",
        Fix(_sentence("compile only for long runs, or cache compilation (TORCHINDUCTOR_FX_GRAPH_CACHE, mega-cache)"),
            "export TORCHINDUCTOR_FX_GRAPH_CACHE=1   # reuse compiled graphs across runs"))


def advise(report: CompileReport | None, comparison: Comparison | None = None,
           run_steps: int | None = None) -> list[Finding]:
    """Every compile finding the evidence supports; `run_steps`: the job's length in steps."""
    if not report:
        return []
    found = (graph_breaks(report), shape_recompiles(report), slower(comparison, report),
             not_repaid(comparison, run_steps))
    return [f for f in found if f is not None]

