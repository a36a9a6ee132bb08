"""The terminal findings: a table ranked by upside, then each fix with its code."""

from __future__ import annotations

from rich.console import Console

from torchdoctor.finding import Finding
from torchdoctor.report.console_findings import evidence_text, findings_renderables, fix_parts, print_findings, ranked


def _text(findings: list[Finding]) -> str:
    console = Console(width=160, record=True, color_system=None, file=open("/dev/null", "w"))
    for renderable in findings_renderables(findings):
        console.print(renderable)
    return console.export_text()


def _finding(fid: str, upside: float, severity: str = "warning", **extra) -> Finding:
    return Finding.from_dict({"id": fid, "layer": "data", "severity": severity, "title": f"title of {fid}", "upside": upside,
            "evidence": {"data_wait_fraction": 0.41234, "num_workers": 0}, "explanation": f"why {fid}",
            "fix": {"text": f"do {fid}", "code": f"loader = DataLoader(ds, num_workers=4)  # {fid}"}, **extra})  # fmt: skip


def test_findings_are_ranked_by_upside_then_severity() -> None:
    findings = [_finding("A", 0.1), _finding("B", 0.5), _finding("C", 0.1, "problem"), _finding("D", 0.0)]
    assert [f.id for f in ranked(findings)] == ["B", "C", "A", "D"]


def test_the_table_lists_each_finding_with_upside_and_evidence_and_the_fix_code_follows() -> None:
    text = _text([_finding("TD-DATA-002", 0.12), _finding("TD-DATA-001", 0.41, "problem")])
    assert text.index("TD-DATA-001") < text.index("TD-DATA-002")
    assert "41%" in text and "data_wait_fraction=0.412, num_workers=0" in text
    assert "loader = DataLoader(ds, num_workers=4)  # TD-DATA-001" in text
    assert "fix: do TD-DATA-001" in text


def test_an_unknown_severity_ranks_after_the_known_ones_and_renders_as_it_is() -> None:
    findings = [_finding("A", 0.1, "severe"), _finding("B", 0.1, "info")]
    assert [f.id for f in ranked(findings)] == ["B", "A"]
    assert "severe" in _text(findings)


def test_no_findings_says_so() -> None:
    assert "no findings" in _text([])


def test_the_fix_parts_and_the_evidence_summary() -> None:
    assert fix_parts(_finding("A", 0.1)) == ("do A", "loader = DataLoader(ds, num_workers=4)  # A")
    assert evidence_text({"a": 1, "b": 2.0, "c": 3, "d": 4, "e": 5}, limit=2) == "a=1, b=2, ..."


def test_print_findings_renders_a_commands_findings_and_nothing_without_them() -> None:
    from torchdoctor.distributed.comm import CommConfig, build_document

    raw = {"meta": {"world_size": 2, "device": "cpu", "device_name": None, "nnodes": 1},
           "collectives": {"all_to_all": {"supported": False, "reason": "not in gloo", "rows": []}}}
    doc = build_document(raw, CommConfig(), "gloo")
    console = Console(width=160, record=True, color_system=None, file=open("/dev/null", "w"))
    print_findings([Finding.from_dict(f) for f in doc["findings"]], console)
    text = console.export_text()
    assert "TD-SCALE-011" in text and "all_to_all is not supported by gloo" in text and "torchdoctor comm" in text
    print_findings([], console)
    assert console.export_text() == ""
