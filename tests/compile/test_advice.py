"""Compile findings: each fires on its evidence and stays silent without it; they are the Findings of
the rules TD-COMP-021..024 (same ids, fields and renderer)."""

from __future__ import annotations

from typing import Any

from torchdoctor.compile import advice
from torchdoctor.compile.advice import DEFAULT_BREAK_FIX
from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.report import CompileReport
from torchdoctor.finding import Finding

BREAK = {"filename": "/x/train.py", "lineno": 15, "reason": "Unsupported Tensor.item() call", "count": 3}
RECOMPILE = {"function": "forward", "filename": "/x/train.py", "lineno": 13,
             "guard": "1/0: tensor 'x' size mismatch at index 1. expected 4, actual 5"}


def comparison(verdict: str, ratio: float, payoff: float | None, compile_s: float = 30.0) -> Comparison:
    return Comparison.from_dict({"verdict": {"verdict": verdict, "ratio": ratio}, "payoff_steps": payoff,
                                 "compile_time_s": compile_s, "eager_step_s": 0.010, "compiled_step_s": 0.010 * ratio})


def advise(report: dict[str, Any], found: Comparison | None = None, run_steps: int | None = None) -> list[Finding]:
    """The advice on the compile report of this Record JSON."""
    return advice.advise(CompileReport.from_dict(report), found, run_steps)


def test_a_graph_break_names_its_line_and_the_fix_for_its_reason():
    (finding,) = advise({"graph_breaks": [BREAK], "graph_break_count": 1})
    assert isinstance(finding, Finding) and finding.id == "TD-COMP-022" and finding.layer == "compute"
    assert finding.title == "1 graph break(s) in compiled code, first at train.py:15"
    assert finding.evidence["graph_breaks"][0]["at"] == "train.py:15"
    assert "capture_scalar_outputs" in finding.evidence["graph_breaks"][0]["fix"]
    assert finding.fix.text.startswith("At train.py:15: keep the value a tensor") and finding.fix.code
    (other,) = advise({"graph_breaks": [{**BREAK, "reason": "something new"}]})
    assert other.evidence["graph_breaks"][0]["fix"] == DEFAULT_BREAK_FIX


def test_several_breaks_are_one_finding_with_each_break_and_its_fix_in_the_evidence():
    second = {**BREAK, "lineno": 20, "reason": "call to builtin operator print"}
    (finding,) = advise({"graph_breaks": [BREAK, second], "graph_break_count": 2})
    assert [b["at"] for b in finding.evidence["graph_breaks"]] == ["train.py:15", "train.py:20"]
    assert "print/logging" in finding.evidence["graph_breaks"][1]["fix"]


def test_shape_recompiles_suggest_dynamic_shapes_and_mention_the_limit():
    (finding,) = advise({"recompiles": [RECOMPILE], "recompile_limit_hit": {"config": "recompile_limit", "limit": 8}})
    assert finding.id == "TD-COMP-021" and "dynamic=True" in finding.fix.text
    assert "recompile limit" in finding.title
    assert finding.severity == "problem" and finding.upside == 0.0  # no timed window in a bare report
    (no_limit,) = advise({"recompiles": [RECOMPILE]})
    assert no_limit.severity == "warning"


def test_slower_and_unrepaid_compilation_are_both_reported():
    found = advise({"graph_count": 1}, comparison("slower", 1.4, None), run_steps=100)
    assert [f.id for f in found] == ["TD-COMP-023", "TD-COMP-024"]
    slower, unrepaid = found
    assert slower.upside == round(1 - 1 / 1.4, 4) and slower.severity == "problem"
    assert slower.evidence["ratio"] == 1.4
    assert unrepaid.title == "30.0 s of compilation is never repaid; the run has 100 steps"
    assert unrepaid.evidence["steps_per_epoch"] == 100 and unrepaid.upside > 0.9


def test_a_faster_compile_repaid_within_the_run_gives_no_advice():
    assert advise({"graph_count": 1}, comparison("faster", 0.7, 50.0), run_steps=1000) == []


def test_without_a_run_length_compile_time_is_not_judged():
    assert [f.id for f in advise({"graph_count": 1}, comparison("slower", 1.4, None))] == ["TD-COMP-023"]


GRAD_MODE = {"function": "forward", "filename": "/x/model.py", "lineno": 170,
             "guard": "0/0: GLOBAL_STATE changed: grad_mode"}


def test_slower_steps_name_their_measured_cause_never_a_generic_list():
    # nanoGPT on CPU: no break, one recompile from an evaluation under no_grad, compiled x1.24 slower
    (finding,) = advise({"graph_count": 2, "recompiles": [GRAD_MODE]}, comparison("slower", 1.24, None))
    assert finding.evidence["cause"] == "overhead"
    assert finding.evidence["recompile_outside_steady_state"]["guard"] == GRAD_MODE["guard"]
    assert "10.00 ms eager step" in finding.explanation and "grad_mode" in finding.explanation
    assert "outside the steady state" in finding.explanation
    assert "remove the graph breaks" not in finding.fix.text.lower()
    broken = [f for f in advise({"graph_breaks": [BREAK]}, comparison("slower", 1.4, None)) if f.id == "TD-COMP-023"]
    assert broken[0].evidence["cause"] == "graph_break" and broken[0].fix.text.startswith("At train.py:15:")
    shaped = [f for f in advise({"recompiles": [RECOMPILE]}, comparison("slower", 1.4, None)) if f.id == "TD-COMP-023"]
    assert shaped[0].evidence["cause"] == "shape_recompiles" and "dynamic=True" in shaped[0].fix.text
