"""TD-COMP-009 counts DataLoader workers only when they are busy, with the cores they measurably use, and
claims no more than the cores its fix leaves the step can give back."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.probe_values import THREADS
from torchdoctor.record import Record
from torchdoctor.rules import diagnose

IDLE = Path(__file__).resolve().parent / "fixtures" / "TD-COMP-009" / "silent_idle_workers.json"
COMPUTE = 0.8  # forward + backward + optimizer fractions of the fixture


def _with_worker_cpu(percent: float | None, cores: int = 2, threads: int = 2) -> Record:
    record = Record.load(IDLE)  # 2 intra-op threads + 2 workers on 2 cores
    record.env["cpu"].update(physical_cores=cores, logical_cores=cores, affinity_cores=cores)
    record.env["torch"]["num_threads"] = threads
    summary = record.system["summary"]
    summary["machine_cpu_percent_mean"] = summary["process_cpu_percent_mean"] / cores  # no other process
    if percent is None:
        del record.system["summary"]["children_cpu_percent_mean"]
    else:
        record.system["summary"]["children_cpu_percent_mean"] = percent
    return record


def test_busy_workers_on_oversubscribed_cores_fire_with_a_smaller_upside_than_the_whole_excess():
    # 8 threads + 2 workers using 1.8 cores on 4 cores; the fix keeps 2 threads, on cores of their own.
    (finding,) = diagnose(_with_worker_cpu(180.0, cores=4, threads=8), select=["TD-COMP-009"]).findings
    assert finding.evidence["worker_cpu_cores"] == 1.8
    assert "busy workers" in finding.title
    assert "torch.set_num_threads(2)" in finding.fix.code
    whole_excess = COMPUTE * (1 - 4 / (8 + 1.8))  # the old guess: every thread beyond the cores given back
    assert 0.05 < finding.upside < whole_excess
    assert finding.upside == pytest.approx(COMPUTE * (1 - 1 / finding.evidence["compute_speedup_ceiling"]), abs=1e-3)


def test_cutting_threads_beside_busy_workers_that_keep_every_core_claims_nothing():
    # 2 threads + 1.8 busy worker cores on 2 cores: the fix's one thread gets fewer cycles than the two
    # have now (halving threads beside workers measured x0.58-x0.60 on pytorch/examples imagenet, dcgan).
    assert diagnose(_with_worker_cpu(180.0), select=["TD-COMP-009"]).findings == []


def test_idle_workers_or_an_unmeasured_worker_cpu_leave_the_threads_alone():
    assert diagnose(_with_worker_cpu(24.0), select=["TD-COMP-009"]).findings == []
    assert diagnose(_with_worker_cpu(None), select=["TD-COMP-009"]).findings == []


def test_threads_on_two_cores_claim_at_most_the_parallelism_of_two_cores():
    # The zoo's compute_threads: 8 intra-op threads on 2 cores, 96% of the step computing. TD-COMP-009
    # claimed 72% (x3.6), every thread beyond the cores given back; its fix, 2 threads, measured x1.31.
    record = Record.load(IDLE.parent / "fires.json")
    record.env["cpu"].update(physical_cores=2, logical_cores=2, affinity_cores=2)
    record.env["torch"]["num_threads"] = 8
    record.summary.forward_fraction, record.summary.backward_fraction = 0.4, 0.4
    record.summary.optimizer_fraction = 0.16
    (finding,) = diagnose(record, select=["TD-COMP-009"]).findings
    assert 1.5 < 1 / (1 - finding.upside) <= 2.0 and finding.severity == "problem"
    assert "torch.set_num_threads(2)" in finding.fix.code


def _compute_threads_with_probe(speedup: float | None, tried: int = 2, complete: bool = True,
                                verdict: str | None = None) -> Record:
    record = Record.load(IDLE.parent / "fires.json")
    record.env["cpu"].update(physical_cores=2, logical_cores=2, affinity_cores=2)
    record.env["torch"]["num_threads"] = 8
    record.summary.forward_fraction, record.summary.backward_fraction = 0.4, 0.4
    record.summary.optimizer_fraction = 0.16
    record.probes[THREADS.name] = {"threads": 8, "tried_threads": tried, "complete": complete, "reason": None,
                            "samples": 12, "step_s_script_threads": 0.030,
                            "step_s_tried_threads": 0.030 / speedup if speedup else None, "speedup": speedup,
                            "speedup_ci": None, "verdict": verdict}
    return record


def test_a_measured_probe_of_the_fix_replaces_the_ceiling():
    # compute_threads: the ceiling claimed x1.93 (upside 46%) where the fix measured x1.31 (24%).
    (finding,) = diagnose(_compute_threads_with_probe(1.31), select=["TD-COMP-009"]).findings
    assert finding.upside == pytest.approx(1 - 1 / 1.31, abs=1e-3)
    assert finding.evidence["upside_basis"] == "measured" and finding.evidence["measured_speedup"] == 1.31
    assert "compute_speedup_ceiling" not in finding.evidence
    assert "measured 1.31x faster" in finding.explanation


def test_a_fix_that_measured_slower_or_the_same_is_not_recommended():
    # Beside a busy process, 2 threads on 2 cores measured x0.16 of 8 threads' pace (spinning OpenMP waits).
    assert diagnose(_compute_threads_with_probe(0.16), select=["TD-COMP-009"]).findings == []
    assert diagnose(_compute_threads_with_probe(1.03), select=["TD-COMP-009"]).findings == []


def test_a_gain_the_probe_did_not_judge_faster_is_not_recommended():
    # x1.31 by the mean, but the probe's interval reached below x1: no clear difference, no finding.
    unclear = _compute_threads_with_probe(1.31, verdict="no clear difference")
    assert diagnose(unclear, select=["TD-COMP-009"]).findings == []
    (finding,) = diagnose(_compute_threads_with_probe(1.31, verdict="faster"), select=["TD-COMP-009"]).findings
    assert finding.evidence["probe_verdict"] == "faster"


def test_a_probe_of_another_count_or_cut_short_leaves_the_ceiling():
    for record in (_compute_threads_with_probe(1.31, tried=1), _compute_threads_with_probe(None, complete=False)):
        (finding,) = diagnose(record, select=["TD-COMP-009"]).findings
        assert finding.evidence["upside_basis"] == "ceiling" and "not measured" in finding.explanation
