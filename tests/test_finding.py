"""One Finding for every command: the rules', the compile advice's and the `scale` and `comm` sweeps'
findings share one value, one id scheme (docs/rules.md) and knobs that exist."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from torchdoctor.compile.advice import advise
from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.report import CompileReport
from torchdoctor.distributed.comm import CommConfig, build_document, comm_findings
from torchdoctor.distributed.scale import scale_findings, scaling_document
from torchdoctor.finding import LAYERS, SEVERITIES, Finding, Fix, new_finding
from torchdoctor.knobs import REGISTRY as KNOBS
from torchdoctor.rules import all_rules

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "rules.md"
PREFIXES = {"data": "DATA", "compute": "COMP", "memory": "MEM", "scale": "SCALE", "config": "CONF"}


def _compile_findings() -> list[Finding]:
    report = {"graph_breaks": [{"filename": "t.py", "lineno": 3, "reason": "Unsupported Tensor.item() call",
                                "count": 1}],
              "recompiles": [{"function": "f", "filename": "t.py", "lineno": 2,
                              "guard": "tensor 'x' size mismatch at index 0"}]}
    comparison = {"verdict": {"verdict": "slower", "ratio": 1.3}, "payoff_steps": None, "compile_time_s": 20.0,
                  "eager_step_s": 0.01, "compiled_step_s": 0.013}
    return advise(CompileReport.from_dict(report), Comparison.from_dict(comparison), run_steps=50)


def _scale_findings() -> list[Finding]:
    def row(nproc, throughput, step_s, data_wait_s, backward_s, reason="completed", stragglers=()):
        return {"nproc": nproc, "throughput_per_s": throughput, "unit": "samples/s", "exit_reason": reason,
                "exit_message": "boom", "step_s": step_s, "data_wait_s": data_wait_s, "backward_s": backward_s,
                "distributed": {"gap_s": 0.0, "stragglers": list(stragglers)} if nproc > 1 else None}

    straggler = {"rank": 1, "excess_s": 0.02, "excess_of_step_fraction": 0.5, "cause": "data loading"}
    rows = [row(1, 100.0, 0.010, 0.005, 0.002), row(2, 110.0, 0.018, 0.012, 0.002, stragglers=[straggler]),
            row(4, None, None, 0.0, 0.0, reason="script_error")]
    scaling_document("s.py", [], rows)  # fills speed-up, efficiency and the loss layer in place
    return scale_findings(rows)


def _comm_findings() -> list[Finding]:
    def result(supported=True, correct=True, busbw=10.0):
        rows = [{"size_bytes": 8, "count": 2, "time_us": 1.0, "algbw_gb_per_s": busbw, "busbw_gb_per_s": busbw,
                 "correct": correct}] if supported else []
        return {"supported": supported, "reason": None if supported else "no", "rows": rows}

    raw = {"meta": {"world_size": 2, "device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "nnodes": 1},
           "collectives": {"all_reduce": result(correct=False), "all_to_all": result(supported=False)}}
    return comm_findings(build_document(raw, CommConfig(), "nccl"))


COMMAND_FINDINGS = [*_compile_findings(), *_scale_findings(), *_comm_findings()]


def test_every_kind_of_command_finding_is_exercised_here() -> None:
    assert sorted({f.id for f in COMMAND_FINDINGS}) == [
        "TD-COMP-021", "TD-COMP-022", "TD-COMP-023", "TD-COMP-024",
        "TD-SCALE-002", "TD-SCALE-008", "TD-SCALE-009", "TD-SCALE-010", "TD-SCALE-011", "TD-SCALE-012",
        "TD-SCALE-013"]


@pytest.mark.parametrize("finding", COMMAND_FINDINGS, ids=lambda f: f.id)
def test_a_command_finding_has_every_field_a_documented_id_and_a_registered_knob(finding: Finding) -> None:
    assert re.fullmatch(rf"TD-{PREFIXES[finding.layer]}-\d{{3}}", finding.id)
    assert finding.severity in SEVERITIES and 0.0 <= finding.upside <= 1.0
    assert finding.title and finding.evidence and finding.explanation and finding.fix.text and finding.fix.code
    assert finding.knob is None or finding.knob in KNOBS
    assert f"`{finding.id}`" in DOCS.read_text(encoding="utf-8")


def test_a_command_shares_an_id_with_a_rule_only_for_the_same_problem() -> None:
    rules = {r.id: r for r in all_rules()}
    shared = {f.id for f in COMMAND_FINDINGS} & set(rules)
    assert shared == {"TD-COMP-021", "TD-COMP-022", "TD-COMP-023", "TD-COMP-024", "TD-SCALE-002"}
    for finding in COMMAND_FINDINGS:
        if finding.id in rules:
            assert (rules[finding.id].layer, rules[finding.id].knob) == (finding.layer, finding.knob)


def test_new_finding_clamps_the_upside_and_refuses_unknown_severities_and_layers() -> None:
    fix = Fix("do it", "x = 1")
    assert new_finding("TD-DATA-999", "data", "info", "t", 1.7, {"a": 1}, "why", fix).upside == 1.0
    assert new_finding("TD-DATA-999", "data", "info", "t", 0.123456, {"a": 1}, "why", fix).upside == 0.1235
    with pytest.raises(ValueError, match="unknown severity"):
        new_finding("TD-DATA-999", "data", "fatal", "t", 0.0, {}, "why", fix)
    with pytest.raises(ValueError, match="unknown layer"):
        new_finding("TD-DATA-999", "network", "info", "t", 0.0, {}, "why", fix)
    assert set(PREFIXES) == set(LAYERS)


def test_the_finding_module_imports_nothing_of_torchdoctor() -> None:
    tree = ast.parse((ROOT / "src" / "torchdoctor" / "finding.py").read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("torchdoctor")]


def test_to_dict_leaves_out_what_the_diagnosis_did_not_set_and_from_dict_reads_it_back() -> None:
    plain = Finding("TD-DATA-999", "data", "info", "t", 0.5, {"a": 1}, "why", Fix("do it"), "num_workers")
    assert list(plain.to_dict()) == ["id", "layer", "severity", "title", "upside", "evidence", "explanation", "fix",
                                     "knob"]
    qualified = replace(plain, confidence="low", caveats=("cut",))
    data = qualified.to_dict()
    assert list(data)[-2:] == ["confidence", "caveats"] and data["caveats"] == ["cut"]
    assert data["fix"] == {"text": "do it", "code": ""}
    for finding in (plain, qualified, *COMMAND_FINDINGS):
        assert Finding.from_dict(finding.to_dict()) == finding
    assert Finding.from_dict({**plain.to_dict(), "unknown": 1}) == plain
