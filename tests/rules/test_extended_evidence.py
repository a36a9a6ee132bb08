"""How the rules added with the extended evidence interact with older Records and with each other."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.compile import advice
from torchdoctor.compile.report import CompileReport
from torchdoctor.record import Record
from torchdoctor.rules import diagnose
from torchdoctor.rules.compute import host_overhead_share
from torchdoctor.rules.evidence import Evidence

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _ids(record: Record, select: list[str]) -> list[str]:
    return [f.id for f in diagnose(record, select=select).findings if not f.id.startswith("TDL")]


def test_slow_storage_falls_back_to_process_cpu_in_a_record_without_data_wait_cpu() -> None:
    record = Record.load(FIXTURES / "TD-DATA-007" / "fires.json")
    for step in record.steps:
        step.data_wait_cpu_s = None  # as loaded from an older Record
    record.system["summary"]["process_cpu_percent_mean"] = 60.0
    assert _ids(record, ["TD-DATA-007", "TD-DATA-002"]) == ["TD-DATA-002"]
    record.system["summary"]["process_cpu_percent_mean"] = 5.0
    assert _ids(record, ["TD-DATA-007", "TD-DATA-002"]) == ["TD-DATA-007"]


def test_a_record_written_without_the_new_fields_loads_with_defaults() -> None:
    record = Record.from_json(b'{"schema_version": 1, "steps": [{"index": 0, "wall_s": 0.1, "data_wait_s": 0.05}]}')
    assert record.steps[0].data_wait_cpu_s is None
    result = diagnose(record, select=["TD-COMP-015", "TD-COMP-016"])
    assert result.findings == [] and len(result.skipped) == 2


def test_one_sample_inference_overhead_is_reported_as_unbatched_not_as_tiny_operators() -> None:
    record = Record.load(FIXTURES / "TD-COMP-018" / "fires.json")
    assert _ids(record, ["TD-COMP-018", "TD-COMP-003"]) == ["TD-COMP-018"]
    for step in record.steps:
        step.batch_size = 64
    assert _ids(record, ["TD-COMP-018", "TD-COMP-003"]) == ["TD-COMP-003"]


def test_with_one_sample_a_call_the_time_outside_the_model_call_is_per_call_cost() -> None:
    record = Record.load(FIXTURES / "TD-COMP-018" / "fires.json")
    record.summary.data_wait_fraction, record.summary.forward_fraction = 0.30, 0.65  # fetching the one sample
    evidence = Evidence(record)
    in_model = host_overhead_share(evidence, evidence.trace_rank())
    (finding,) = diagnose(record, select=["TD-COMP-018"]).findings
    assert 0 < in_model < 0.65 and finding.upside == round(in_model + 0.30 + 0.05, 4)  # + the loop's 5%
    assert finding.evidence["per_call_fraction"] == finding.upside


def test_measured_gradcheck_time_is_not_counted_again_as_work_outside_the_phases() -> None:
    record = Record.load(FIXTURES / "TD-COMP-017" / "fires.json")
    record.summary.other_fraction = 0.45  # gradcheck (0.35 of the window) plus 0.10 of other work
    assert _ids(record, ["TD-COMP-017", "TD-COMP-013"]) == ["TD-COMP-017"]
    record.env["script_tools"]["gradcheck_s"] = 0.0
    record.env["script_tools"]["gradcheck_calls"] = 0
    assert _ids(record, ["TD-COMP-017", "TD-COMP-013"]) == ["TD-COMP-013"]


def test_compile_findings_carry_the_fix_the_compile_advice_gives() -> None:
    record = Record.load(FIXTURES / "TD-COMP-022" / "fires.json")
    (finding,) = diagnose(record, select=["TD-COMP-022"]).findings
    report = CompileReport.from_dict(record.compile)
    assert finding == advice.graph_breaks(report)  # one finding, whether diagnose or compile reports it
    reason = report.graph_breaks[0].reason
    fix = advice.break_fix(reason)
    assert finding.evidence["graph_breaks"][0] == {"at": "model.py:31", "reason": reason, "fix": fix}
    assert "model.py:31" in finding.title and fix in finding.fix.text


def test_compile_comparison_rules_are_skipped_without_a_comparison() -> None:
    record = Record.load(FIXTURES / "TD-COMP-022" / "fires.json")
    result = diagnose(record, select=["TD-COMP-023", "TD-COMP-024"])
    assert result.findings == [] and all("compile.comparison" in s for s in result.skipped)


def test_anomaly_mode_seen_at_the_window_start_counts_even_if_the_run_ended_without_it() -> None:
    record = Record.load(FIXTURES / "TD-COMP-007" / "silent.json")
    assert _ids(record, ["TD-COMP-007"]) == []
    record.env["script_tools"] = {"profiler_enabled": False, "anomaly_detection": True}  # a detect_anomaly() block
    assert _ids(record, ["TD-COMP-007"]) == ["TD-COMP-007"]
