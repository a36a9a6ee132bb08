"""`diagnose` on every zoo workload: on a problem workload the expected rule is the top finding; on a
healthy one nothing is a warning or worse. Plus two third-party training patterns (pytorch/examples'
regression and time-sequence prediction, recreated) that must run and get sensible findings.

Real processes, short windows; the workloads make their problem dominate by a wide margin, since
the machine running the tests is shared and its timings noisy. Each workload runs in a child forked
from one fork server (`torchdoctor check`'s launcher, launch/forkserver.py) that imported torch
once: about 5 s of imports fewer per workload. The plain subprocess launch is what tests/observe/
and tests/field/ run.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests.field.helpers import assert_shares_add_up

from torchdoctor.accounting.explain import UNEXPLAINED_ID
from torchdoctor.analyse import analyse_record
from torchdoctor.bench import FASTER
from torchdoctor.finding import Finding
from torchdoctor.launch import LaunchConfig, ObserveConfig, observe
from torchdoctor.launch.forkserver import ForkServer
from torchdoctor.probe_values import THREADS
from torchdoctor.record import Record
from torchdoctor.rules import diagnose, diagnose_record
from torchdoctor.rules.compute import DISTURBED_STEP
from torchdoctor.trace.summary.trace_summary import TraceSummary
from torchdoctor.zoo import WORKLOADS, workload_path

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parent / "scripts"
# Two profiled steps: per-operator rules trust only what both show (a stall on a loaded host hits one).
FAST = ObserveConfig(warmup_steps=2, timing_steps=6, profile_wait=0, profile_warmup=1, profile_active=2)


@pytest.fixture(scope="module")
def server():
    with ForkServer() as started:
        yield started


def diagnosed(script: Path, tmp_path: Path, server: ForkServer) -> Record:
    record = analyse_record(observe(script, [], FAST, LaunchConfig(timeout_s=300, server=server), out_dir=tmp_path))
    assert record.exit.reason == "completed", record.exit
    record.findings = diagnose_record(record)
    return record


def summary(record: Record) -> list[tuple[str, str, float, dict]]:
    """Each finding's id, severity and upside, with its evidence: a failure says what was measured."""
    return [(f.id, f.severity, f.upside, f.evidence) for f in record.findings]


def disturbed_profile(record: Record, rule: str) -> bool:
    """`rule` was skipped because the machine's load changed between the timed and profiled steps:
    the tool's honest answer on a shared host, not the rule's verdict on the workload."""
    return any(s.startswith(f"{rule}: ") and "representative profiled step" in s for s in diagnose(record).skipped)


def load_changed(record: Record) -> bool:
    """A timed step half again as long as the median, or profiled steps further apart than the rules'
    DISTURBED_STEP: the host's load changed within the run. A stall inside a profiled operator counts
    both as big work and in the profiler's difference (rules/compute.py, `_undisturbed_step`), so
    the overhead claims of TD-COMP-003/018 come out low; reproduced beside a bursty two-thread torch
    process: inference_unbatched claimed 34% (86-91% in the calm runs of the same hour)."""
    walls = [s.wall_s for s in record.steps]
    ranks = TraceSummary.from_dict(record.trace).ranks if record.trace else ()
    profiled = [s.wall_us for rank in ranks[:1] for s in rank.steps if s.wall_us]
    timed_spike = bool(walls) and max(walls) > 1.5 * statistics.median(walls)
    return timed_spike or (len(profiled) > 1 and max(profiled) > DISTURBED_STEP * min(profiled))


# Serial: a profile's shares are what the run measured, and a neighbouring test's burst can hold
# through both observations of a workload. Seen in a CI run, within one minute beside another
# worker: compute_loop_optimizer's aten::mul measured 40% of the step in every profiled step (6-10% in
# calm runs), ranked above TD-COMP-012; inference_unbatched missed TD-COMP-018 in both observations.
@pytest.mark.serial
@pytest.mark.parametrize("name", sorted(n for n, rule in WORKLOADS.items() if rule))
def test_the_known_problem_is_the_top_finding(name: str, tmp_path: Path, server: ForkServer) -> None:
    record = diagnosed(workload_path(name), tmp_path / "first", server)
    missed = ranked(record)[:1] != [WORKLOADS[name]]
    # Seen in CI beside another test worker: the tool declined a disturbed profile, or the load changed
    # and the claim came out under its threshold. Observe once more; the second run must find it.
    if disturbed_profile(record, WORKLOADS[name]) or (missed and load_changed(record)):
        record = diagnosed(workload_path(name), tmp_path / "again", server)
    if threads_fix_measured_no_faster(record, WORKLOADS[name]):
        return
    assert record.findings, "no finding at all"
    skipped = [s for s in diagnose(record).skipped if s.startswith(WORKLOADS[name])]
    evidence = (summary(record), skipped, [s.wall_s for s in record.steps])
    if WORKLOADS[name] in MORE_WORKERS and "TD-COMP-031" in [f.id for f in record.findings]:
        # Other processes held the cores: a fix that needs a free one (more DataLoader workers) may
        # then fall under its threshold, rightly (tune measured the demo's worker x0.84 beside a busy
        # process). No other problem may take its place.
        assert ranked(record, loud_only=True)[:1] in ([WORKLOADS[name]], []), evidence
        return
    assert ranked(record)[:1] == [WORKLOADS[name]], evidence


#: Rules whose fix adds DataLoader workers, each of which needs a core the script can have.
MORE_WORKERS = ("TD-DATA-002", "TD-DATA-003")


def ranked(record: Record, *, loud_only: bool = False) -> list[str]:
    """The findings' ids in order (with `loud_only`, those above `info`), less those that may
    rightly lead a zoo workload's own problem.

    The generic finding of a cost below its speed of light that no rule explains (TD-COMP-025) may
    come first: on compute_grad_inference the operators ran at 44% of this CPU's peak, a separate
    cost from autograd's recording, which TD-COMP-008 names. What the dataset repeats for every
    sample (TD-DATA-012) may lead on the data workloads: it names the code the same wait runs.
    TD-COMP-031 fires only beside other busy processes (a neighbour the suite does not control):
    the script's threads compete with them and that finding rightly leads, its fix measured by the
    threads probe; it is the machine's state, not the workload's problem."""
    return [f.id for f in record.findings if f.id not in (UNEXPLAINED_ID, "TD-DATA-012", "TD-COMP-031")
            and not (loud_only and f.severity == "info")]


def threads_fix_measured_no_faster(record: Record, rule: str) -> bool:
    """TD-COMP-009 rests on the threads probe: fewer threads measured in the run itself. Beside a busy
    process (another test worker), the cores' own count of threads can measure several times slower
    than the oversubscribed count (spinning OpenMP threads wait on a descheduled one), and then the
    rule must stay silent: its fix would make this run slower (or, not judged faster, could)."""
    probe = THREADS.of(record)
    if rule != "TD-COMP-009" or not probe or not probe["complete"]:
        return False
    if probe["speedup"] >= 1 / 0.95 and probe["verdict"] == "faster":
        return False
    assert rule not in [f.id for f in record.findings], summary(record)
    return True


@pytest.mark.parametrize("name", sorted(n for n, rule in WORKLOADS.items() if rule is None))
def test_a_healthy_workload_has_no_warning_the_run_did_not_measure(name: str, tmp_path: Path,
                                                                   server: ForkServer) -> None:
    """Healthy means no known problem, not nothing to win: compiling healthy_cnn's step measures about
    x1.6 on a CPU (fused BatchNorm and ReLU, a faster max-pool; its docstring). When the run's estimate
    reaches the compile probe (seen in CI beside another test worker, where it measured x2.06), the
    claim is a measurement of this run, not a false alarm; an estimate alone must stay quiet. So may
    the generic speed-of-light finding, on a quiet machine: it names that very gap (healthy_cnn's
    max-pool and BatchNorm memory-bound below this CPU's bandwidth, 15-21% claimed where compiling
    measures about 37%), claiming less than the fix measures."""
    record = diagnosed(workload_path(name), tmp_path, server)
    loud = [f for f in record.findings if f.severity != "info" and f.id != UNEXPLAINED_ID]
    assert all(measured_faster(f) for f in loud), summary(record)


def measured_faster(finding: Finding) -> bool:
    """The finding's claim is what its fix measured in this run, judged faster (rules/probed.py)."""
    evidence = finding.evidence
    return evidence.get("upside_basis") == "measured" and evidence.get("probe_verdict") == FASTER


def test_every_workload_states_its_problem_and_expected_rule() -> None:
    for name, rule in WORKLOADS.items():
        text = workload_path(name).read_text(encoding="utf-8")
        assert "Known problem" in text or "Problem:" in text or "Healthy" in text, name
        if rule and name != "demo":  # the demo names its rule family
            assert rule in text, f"{name}'s docstring should name {rule}"


def test_regression_pattern_is_diagnosed_as_per_step_python_work(tmp_path: Path, server: ForkServer) -> None:
    record = diagnosed(SCRIPTS / "regression_pattern.py", tmp_path, server)
    assert record.step_detection == "backward"  # no optimizer object: steps are backward calls
    assert not any(f.layer in ("data", "memory", "scale") for f in record.findings), summary(record)
    # TD-COMP-031 is the machine, not the script: beside the other test worker its threads compete.
    # TD-COMP-025, on a quiet machine: its tiny operators run below this CPU's peak (12% of the step).
    expected = ("TD-COMP-013", "TD-COMP-003", "TD-COMP-031", "TD-COMP-025")
    assert all(f.id in expected or f.severity == "info" for f in record.findings), summary(record)


def test_time_sequence_pattern_runs_with_lbfgs_closures(tmp_path: Path) -> None:
    # One intra-op thread, in a process of its own (not the fork server's two): beside one busy process
    # LBFGS's parallel vector operations (its 32k-element flat gradient) spin on a descheduled OpenMP
    # team-mate, and the optimizer's own share went from 6-8% to 58% (2 runs in 2 beside a busy loop,
    # and in two full suites beside the other test worker), the closure's share under this test's 0.5.
    launch = LaunchConfig(timeout_s=300, extra_env={"OMP_NUM_THREADS": "1"})
    record = analyse_record(observe(SCRIPTS / "time_sequence_pattern.py", [], FAST, launch, out_dir=tmp_path))
    assert record.exit.reason == "completed", record.exit
    record.findings = diagnose_record(record)
    # The closure's forward and backward run inside optimizer.step(): each is counted in its own phase.
    s = record.summary
    assert record.step_detection == "optimizer" and s.forward_fraction + s.backward_fraction > 0.5
    assert_shares_add_up(record)
    assert record.trace and TraceSummary.from_dict(record.trace).ranks[0].host.small_ops_count > 1000
    assert not any(f.layer in ("data", "memory", "scale") for f in record.findings), summary(record)
    assert all(f.layer == "compute" or f.severity == "info" for f in record.findings), summary(record)
