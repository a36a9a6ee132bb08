"""Evidence-backed advice from a compile report and an eager-vs-compiled comparison (dicts).

Each piece of advice names what was seen and the usual fix. The diagnosis rules (torchdoctor.rules)
may wrap these; this module only reads the keys documented in docs/compile.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: (substring of a graph-break reason, the usual fix), first match wins.
BREAK_FIXES = (
    (".item()", "keep the value a tensor (or set torch._dynamo.config.capture_scalar_outputs = True); "
                "move logging of scalars out of the compiled code"),
    ("builtin operator", "move print/logging calls out of the compiled function"),
    ("data-dependent", "move the data-dependent branch out, or express it with torch.cond"),
    ("generic_jump", "move the data-dependent branch out, or express it with torch.cond"),
)
DEFAULT_BREAK_FIX = "wrap the offending submodule in torch.compiler.disable, or move the call out of forward"


@dataclass(frozen=True, slots=True)
class Advice:
    code: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _break_fix(reason: str) -> str:
    return next((fix for key, fix in BREAK_FIXES if key in reason), DEFAULT_BREAK_FIX)


def graph_breaks(report: dict[str, Any]) -> list[Advice]:
    return [Advice("compile.graph_break",
                   f"graph break at {Path(b['filename']).name}:{b['lineno']} ({b['count']}x): {b['reason']}",
                   _break_fix(b["reason"]))
            for b in report.get("graph_breaks", [])]  # fmt: skip


def shape_recompiles(report: dict[str, Any]) -> list[Advice]:
    shapes = [r for r in report.get("recompiles", []) if "size mismatch" in (r.get("guard") or "")]
    if not shapes:
        return []
    limit = " and hit the recompile limit (later calls run eagerly)" if report.get("recompile_limit_hit") else ""
    return [Advice("compile.shape_recompiles",
                   f"{len(shapes)} recompilations because input shapes changed{limit}, e.g. {shapes[0]['guard']}",
                   "compile with dynamic=True, or pad/bucket inputs to a few fixed shapes")]  # fmt: skip


def speed(comparison: dict[str, Any] | None, run_steps: int | None) -> list[Advice]:
    if not comparison:
        return []
    advice = []
    verdict = comparison["verdict"]
    if verdict["verdict"] == "slower":
        advice.append(Advice("compile.slower", f"compiled steps are slower than eager (ratio {verdict['ratio']:.2f})",
                             "remove the graph breaks and recompilations above, or do not compile this model"))
    payoff, compile_s = comparison.get("payoff_steps"), comparison.get("compile_time_s")
    if compile_s and run_steps and (payoff is None or payoff > run_steps):
        repaid = f"repaid after ~{payoff:.0f} steps" if payoff else "never repaid"
        advice.append(Advice("compile.not_repaid", f"{compile_s:.1f} s of compilation is {repaid}; "
                             f"the run has {run_steps} steps", "compile only for long runs, or cache "
                             "compilation (TORCHINDUCTOR_FX_GRAPH_CACHE, mega-cache)"))  # fmt: skip
    return advice


def advise(report: dict[str, Any] | None, comparison: dict[str, Any] | None = None,
           run_steps: int | None = None) -> list[Advice]:
    """Every piece of advice the evidence supports; `run_steps`: the job's length in steps."""
    if not report:
        return []
    return graph_breaks(report) + shape_recompiles(report) + speed(comparison, run_steps)
