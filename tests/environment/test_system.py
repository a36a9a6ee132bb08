"""`record.system` read back as a SystemSection: the sampled load of Records observed on an H200 and
on a CPU gives, through `from_dict` and `to_dict`, the very JSON it was read from, and its summary's
figures and samples read as attributes; an absent or wrongly typed section reads as an empty summary for a renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchdoctor.environment import SystemSection, SystemSummary
from torchdoctor.environment.system import others_material
from torchdoctor.errors import RecordFormatError

TESTS = Path(__file__).resolve().parents[1]
H200 = TESTS / "rules" / "device_records" / "h200-demo-diagnose.json"
CPU = TESTS / "fixtures" / "records" / "cpu-compile-breaks.json"


@pytest.mark.parametrize("path", [H200, CPU], ids=["h200", "cpu"])
def test_the_system_section_of_an_observed_record_round_trips(path: Path) -> None:
    system = json.loads(path.read_text())["system"]
    assert json.dumps(SystemSection.from_dict(system).to_dict()) == json.dumps(system)


def test_the_figures_read_as_attributes() -> None:
    h200 = SystemSection.from_dict(json.loads(H200.read_text())["system"])
    assert h200.summary is not None and h200.summary.over == "window" and h200.gpu_sampled
    assert h200.summary.gpu_util_percent_mean == pytest.approx(0.9)
    cpu = json.loads(CPU.read_text())["system"]
    samples = SystemSection.from_dict(cpu).samples
    assert len(samples["t_s"]) == len(cpu["samples"]["t_s"]) > 0
    assert samples["process_cpu_percent"][0] == cpu["samples"]["process_cpu_percent"][0]


def test_a_summary_without_a_figure_reads_it_as_none() -> None:
    summary = SystemSection.summary_of({"summary": {"num_samples": 0}})
    assert summary.num_samples == 0 and summary.process_cpu_percent_mean is None
    assert SystemSection.summary_of({}) == SystemSummary()


def test_a_wrongly_typed_section_is_an_error_naming_it_and_an_empty_summary_to_a_renderer() -> None:
    bad = {"summary": {"process_cpu_percent_mean": "high"}}
    with pytest.raises(RecordFormatError, match="'system.summary.process_cpu_percent_mean' should be a number"):
        SystemSection.from_dict(bad)
    assert SystemSection.summary_of(bad) == SystemSummary()
    assert SystemSection.summary_of("samples") == SystemSummary()


@pytest.mark.parametrize(("machine", "process", "cores", "others"), [
    (100.0, 90.0, 2, 1.1),  # a saturated 2-core machine: what the script did not get, others got
    (48.0, 90.0, 2, 0.06),
    (10.0, 90.0, 2, 0.0),  # samples taken a little apart: never below 0
    (None, 90.0, 2, None), (100.0, None, 2, None), (100.0, 90.0, None, None),
])
def test_other_processes_cores_are_the_machine_less_the_scripts_process_tree(machine, process, cores, others):
    summary = SystemSummary(machine_cpu_percent_mean=machine, process_cpu_percent_mean=process)
    measured = summary.other_cores(cores)
    assert measured == pytest.approx(others) if others is not None else measured is None


def test_other_processes_are_material_from_a_quarter_of_the_machines_cores() -> None:
    assert others_material(0.5, 2) and others_material(2.0, 8)
    assert not others_material(0.49, 2) and not others_material(None, 2) and not others_material(1.0, None)
