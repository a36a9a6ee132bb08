"""The threads probe: blocks of steps with fewer intra-op threads, measured in the script's own loop,
and the script's thread count given back however the probe ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.estimates.threads import threads_in_fix
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.observe.env import usable_cores
from torchdoctor.observe.probes.blocks import BLOCK, ORDER
from torchdoctor.observe.probes.threads import ThreadsProbe
from torchdoctor.probe_values import THREADS
from torchdoctor.rules import diagnose
from torchdoctor.rules.compute_settings import material_others
from torchdoctor.rules.evidence import Evidence


class FakeMachine:
    """torch.set_num_threads and a clock whose steps last `step_ms[threads]`."""

    def __init__(self, step_ms: dict[int, float], threads: int) -> None:
        self.step_ms, self.threads, self.now_ns, self.calls = step_ms, threads, 0, []

    def set_threads(self, n: int) -> None:
        self.threads = n
        self.calls.append(n)

    def clock_ns(self) -> int:
        return self.now_ns

    def run_step(self, extra_ms: float = 0.0) -> None:
        self.now_ns += int((self.step_ms[self.threads] + extra_ms) * 1e6)


def test_fewer_threads_that_run_faster_measure_the_ratio_of_the_two_paces():
    machine = FakeMachine({8: 30.0, 2: 20.0}, threads=8)
    probe = ThreadsProbe(8, 2, set_threads=machine.set_threads, clock_ns=machine.clock_ns)
    probe.begin()
    done = []
    for _ in range(BLOCK * len(ORDER)):
        machine.run_step()
        done.append(probe.step_end())
    assert done == [False] * (BLOCK * len(ORDER) - 1) + [True]
    assert machine.threads == 8  # the script's own count is back
    result = probe.to_dict()
    assert result["complete"] and result["samples"] == len(ORDER) * (BLOCK - 1)
    assert result["step_s_script_threads"] == pytest.approx(0.030)
    assert result["step_s_tried_threads"] == pytest.approx(0.020)
    assert result["speedup"] == pytest.approx(1.5)


def test_the_first_step_of_each_block_is_not_counted():
    # The first step after a change of the thread count pays for resizing the pool: 1 s here.
    machine = FakeMachine({8: 30.0, 2: 20.0}, threads=8)
    probe = ThreadsProbe(8, 2, set_threads=machine.set_threads, clock_ns=machine.clock_ns)
    probe.begin()
    for step in range(BLOCK * len(ORDER)):
        machine.run_step(extra_ms=1000.0 if step % BLOCK == 0 else 0.0)
        probe.step_end()
    assert probe.to_dict()["speedup"] == pytest.approx(1.5)


def test_blocks_alternate_fewer_same_same_fewer_so_a_drift_weighs_on_both_sides():
    machine = FakeMachine({8: 30.0, 2: 30.0}, threads=8)
    probe = ThreadsProbe(8, 2, set_threads=machine.set_threads, clock_ns=machine.clock_ns)
    probe.begin()
    for step in range(BLOCK * len(ORDER)):
        machine.run_step(extra_ms=step)  # the machine gets slower by 1 ms a step
        probe.step_end()
    assert machine.calls == [2, 8, 2, 8]  # at each change of side; the last restores the script's count
    assert probe.to_dict()["speedup"] == pytest.approx(1.0)


def test_a_probe_cut_short_gives_the_threads_back_and_claims_no_speedup():
    machine = FakeMachine({8: 30.0, 2: 20.0}, threads=8)
    probe = ThreadsProbe(8, 2, set_threads=machine.set_threads, clock_ns=machine.clock_ns)
    assert probe.to_dict() is None  # never began
    probe.begin()
    for _ in range(BLOCK + 1):
        machine.run_step()
        probe.step_end()
    probe.close("the script ended during the probe: script_finished")
    result = probe.to_dict()
    assert machine.threads == 8
    assert not result["complete"] and result["speedup"] is None
    assert result["reason"] == "the script ended during the probe: script_finished"


# -- in a real observation ------------------------------------------------------------------------

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "oversubscribed.py"
# Done after 10 steps (2 warm-up, 6 timed, 2 profiled), the memory step is the 11th, the probe's the next 16.
FAST = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=1)


def _fix_count(record) -> int:
    """The count TD-COMP-009's fix names for this run: one thread a core, less the cores other
    processes kept busy over its timed window when that load was material (the machine's, not the
    script's)."""
    return threads_in_fix(4 * usable_cores(), usable_cores(), material_others(Evidence(record)))


def test_an_oversubscribed_script_is_probed_and_td_comp_009_claims_what_the_probe_measured(tmp_path):
    record = observe(SCRIPT, ["200"], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed", record.exit
    probe = THREADS.of(record)
    assert probe["threads"] == 4 * usable_cores() and probe["tried_threads"] == _fix_count(record)
    assert probe["complete"] and probe["samples"] == len(ORDER) * (BLOCK - 1)
    assert probe["speedup"] == pytest.approx(probe["step_s_script_threads"] / probe["step_s_tried_threads"])
    findings = diagnose(record, select=["TD-COMP-009"]).findings
    if probe["speedup"] >= 1 / 0.95 and probe["verdict"] == "faster":  # fewer threads measured 5% faster or more
        (finding,) = findings
        assert finding.evidence["upside_basis"] == "measured"
        assert finding.upside == pytest.approx(1 - 1 / probe["speedup"], abs=1e-4)  # findings round to 4 places
        assert f"torch.set_num_threads({_fix_count(record)})" in finding.fix.code
    else:  # e.g. beside another busy process: the fix could make this run slower, so no finding
        assert findings == []


def test_beside_idle_workers_the_probe_tries_the_count_td_comp_009_names(tmp_path):
    # Two DataLoader workers that slice a tensor: idle, so the fix keeps a thread a core, and so does the probe.
    record = observe(SCRIPT.with_name("oversubscribed_loader.py"), ["200"], FAST, LaunchConfig(timeout_s=300),
                     out_dir=tmp_path)
    assert record.exit.reason == "completed", record.exit
    probe = THREADS.of(record)
    assert probe["complete"]
    if record.system["summary"]["children_cpu_percent_mean"] < 50:  # idle, as on a quiet machine
        assert probe["tried_threads"] == _fix_count(record)
    findings = diagnose(record, select=["TD-COMP-009"]).findings
    # Beside other load the workers read busier (60% of a core seen in CI): whatever count the
    # workers' measured CPU leaves, the rule names the count the probe measured.
    assert all(f.evidence["threads_in_fix"] == probe["tried_threads"] and f.evidence["upside_basis"] == "measured"
               for f in findings)
    assert bool(findings) == (probe["speedup"] >= 1 / 0.95 and probe["verdict"] == "faster")


def test_a_script_that_ends_during_the_probe_is_still_completed_and_the_rule_falls_back_to_its_ceiling(tmp_path):
    record = observe(SCRIPT, ["16"], FAST, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed" and record.exit.status == 0, record.exit
    probe = THREADS.of(record)
    assert not probe["complete"] and probe["speedup"] is None
    assert probe["reason"] == "the script ended during the probe: script_finished"
    (finding,) = diagnose(record, select=["TD-COMP-009"]).findings
    beside = material_others(Evidence(record))  # beside other processes' load no ceiling is claimed
    assert finding.evidence["upside_basis"] == ("not measured" if beside else "ceiling")
    assert "not measured" in finding.explanation


def test_a_run_with_knobs_applied_is_not_probed(tmp_path):
    # tune's trials measure the threads knob themselves; the knob would also hold the count against the probe.
    knobs = ObserveConfig(**{**FAST.to_dict(), "knobs": {"threads": 1}})
    record = observe(SCRIPT, ["40"], knobs, LaunchConfig(timeout_s=300), out_dir=tmp_path)
    assert record.exit.reason == "completed" and THREADS.of(record) is None
