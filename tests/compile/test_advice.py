"""Advice from compile evidence: each fires on its evidence and stays silent without it."""

from __future__ import annotations

from torchdoctor.compile.advice import DEFAULT_BREAK_FIX, advise

BREAK = {"filename": "/x/train.py", "lineno": 15, "reason": "Unsupported Tensor.item() call", "count": 3}
RECOMPILE = {"function": "forward", "filename": "/x/train.py", "lineno": 13,
             "guard": "1/0: tensor 'x' size mismatch at index 1. expected 4, actual 5"}


def comparison(verdict: str, ratio: float, payoff: float | None, compile_s: float = 30.0) -> dict:
    return {"verdict": {"verdict": verdict, "ratio": ratio}, "payoff_steps": payoff, "compile_time_s": compile_s}


def test_a_graph_break_names_its_line_and_the_fix_for_its_reason():
    (advice,) = advise({"graph_breaks": [BREAK]})
    assert advice.message.startswith("graph break at train.py:15 (3x)")
    assert "capture_scalar_outputs" in advice.fix
    (other,) = advise({"graph_breaks": [{**BREAK, "reason": "something new"}]})
    assert other.fix == DEFAULT_BREAK_FIX


def test_shape_recompiles_suggest_dynamic_shapes_and_mention_the_limit():
    (advice,) = advise({"recompiles": [RECOMPILE], "recompile_limit_hit": {"config": "recompile_limit", "limit": 8}})
    assert advice.code == "compile.shape_recompiles" and "dynamic=True" in advice.fix
    assert "recompile limit" in advice.message


def test_slower_and_unrepaid_compilation_are_both_reported():
    codes = [a.code for a in advise({"graph_count": 1}, comparison("slower", 1.4, None), run_steps=100)]
    assert codes == ["compile.slower", "compile.not_repaid"]


def test_a_faster_compile_repaid_within_the_run_gives_no_advice():
    assert advise({"graph_count": 1}, comparison("faster", 0.7, 50.0), run_steps=1000) == []
