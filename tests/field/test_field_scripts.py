"""The field suite: recreations of third-party scripts (pytorch/examples imagenet `--dummy`,
dcgan `--dataset fake`, time_sequence_prediction's LBFGS, regression; a Hugging Face Trainer on a
tiny GPT-2; a Lightning module; a slow `__getitem__`; a tabular autoencoder that switches anomaly
detection on every step), each run unmodified under `torchdoctor
diagnose` in a subprocess: the step detection, shares adding to 1, the findings the script's code implies (present and absent), and the median
step against the script's own printed timing of the same steps.

One intra-op thread (OMP_NUM_THREADS=1, see helpers.ENV), as the figures of docs/field.md.
"""

from __future__ import annotations

import statistics

import pytest

from tests.field.helpers import SCRIPTS, assert_shares_add_up, diagnose, own_step_times_s
from torchdoctor.probe_values import ANOMALY, COMPILE_SPEED

WARMUP_STEPS, TIMING_STEPS = 2, 6
#: regression's steps take 0.25 ms: six of them make a 1.5 ms window, and one time slice lost to another
#: process inside its forward or backward (seen in CI beside another test worker) outweighed the rest of
#: the window and hid its 58% outside the phases. Two hundred of them make a 50 ms window.
LONG_TIMING_STEPS = {"regression": 200}
#: The tabular autoencoder's leader is measured against per-operator shares (TD-COMP-004): in CI, one
#: operator stalled in its only profiled step ranked over anomaly detection. With two profiled steps an
#: operator counts as hot only when both show it, as in the zoo's tests.
PROFILED_STEPS = {"tabular_autoencoder": 2}
#: Scripts on which the compile probe may run (observe.probes.compile_speed; 1,185 operators a profiled
#: Trainer step): they run 18 steps more than the windows, so that the probe completes.
COMPILE_PROBED = {"hf_trainer_gpt2"}


def options(script: str) -> list[str]:
    return ["--warmup-steps", str(WARMUP_STEPS), "--steps", str(LONG_TIMING_STEPS.get(script, TIMING_STEPS)),
            "--profile-wait", "0", "--profile-warmup", "1", "--profile-active", str(PROFILED_STEPS.get(script, 1))]


# script, its arguments, the step detection, the findings that must appear among all findings, those that must
# not. Which finding *leads* is not asserted: where two sit near each other or near a threshold it depends on how
# busy the two cores are (imagenet's and dcgan's workers keep up with the tiny CNN only when they get a core; the
# Trainer's TD-COMP-003 and TD-COMP-013, Lightning's TD-COMP-013 and TDL101 were each seen leading). What is
# asserted follows from the script's code, whatever the load:
# - a finding that reads a fact of the script: anomaly mode on (TD-COMP-007), a hand-written update outside any
#   module or optimizer (regression's TD-COMP-013, 60% of its step), a 2 ms sleep per item (TD-DATA-007, 96%);
# - a finding whose precondition the script lacks: TD-COMP-007 without anomaly mode, TD-DATA-002 (loading in the
#   main process) with workers, TD-DATA-003 (too few workers) without them, any TD-DATA finding without a
#   DataLoader, the CUDA-only findings on a CPU run.
NO_ANOMALY = {"TD-COMP-007"}
NO_WORKERS = {"TD-DATA-003", "TD-DATA-004"}  # workers too few, workers restarting: need workers
WORKERS = {"TD-DATA-002"}  # loading in the main process
NO_LOADER = {"TD-DATA-001", "TD-DATA-002", "TD-DATA-003", "TD-DATA-004", "TD-DATA-005", "TD-DATA-006", "TD-DATA-007",
             "TD-DATA-008", "TD-DATA-009"}
FIELD = [
    pytest.param("imagenet_dummy", ["--dummy", "--workers", "2", "--steps", "14"], "optimizer", set(),
                 NO_ANOMALY | WORKERS, marks=pytest.mark.slow, id="imagenet_dummy"),
    pytest.param("dcgan_fake", ["--dataset", "fake", "--workers", "2", "--steps", "14"], "optimizer", set(),
                 NO_ANOMALY | WORKERS, marks=pytest.mark.slow, id="dcgan_fake"),
    pytest.param("time_sequence_prediction", ["--steps", "14"], "optimizer", set(), NO_ANOMALY | NO_LOADER,
                 id="time_sequence_prediction"),
    pytest.param("regression", ["--steps", "210"], "backward", {"TD-COMP-013"}, NO_ANOMALY | NO_LOADER,
                 id="regression"),
    pytest.param("hf_trainer_gpt2", ["--steps", "40"], "optimizer", set(), NO_ANOMALY | NO_WORKERS,
                 marks=pytest.mark.slow, id="hf_trainer_gpt2"),
    pytest.param("lightning_module", ["--steps", "14"], "optimizer", set(), NO_ANOMALY | NO_WORKERS,
                 marks=pytest.mark.slow, id="lightning_module"),
    pytest.param("slow_getitem", ["--steps", "14"], "optimizer", {"TD-DATA-007"}, NO_ANOMALY | NO_WORKERS,
                 id="slow_getitem"),
    pytest.param("tabular_autoencoder", ["--steps", "14"], "optimizer", {"TD-COMP-007"}, NO_WORKERS,
                 id="tabular_autoencoder"),
]
#: A DataLoader built without num_workers loads in the main process, and lint says so (TDL101) unless
#: TD-DATA-002, which covers the same topic, was raised from the measurement: one of the two, never both.
MAIN_PROCESS_LOADING = {"lightning_module", "slow_getitem", "tabular_autoencoder"}


@pytest.mark.parametrize("script, args, detection, required, forbidden", FIELD)
def test_a_field_script_is_diagnosed_with_its_steps_shares_and_the_findings_its_code_implies(
        tmp_path, script, args, detection, required, forbidden):
    timing_steps = LONG_TIMING_STEPS.get(script, TIMING_STEPS)
    for attempt in ("first", "again"):
        (tmp_path / attempt).mkdir()
    proc, record = diagnose(tmp_path / "first", SCRIPTS / f"{script}.py", args, options(script))
    if proc.returncode == 0 and not required <= {finding.id for finding in record.findings}:
        # A required finding's size is a share of the step's time: seen once in a fresh clone's run beside
        # other work, regression's time outside the phases came out under the threshold, with no finding at
        # all. Observe once more; the second run must find it.
        proc, record = diagnose(tmp_path / "again", SCRIPTS / f"{script}.py", args, options(script))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert record.exit.reason == "completed"
    assert record.step_detection == detection
    assert record.summary.num_steps == timing_steps
    assert len(record.steps) == timing_steps
    assert_shares_add_up(record)
    ids = [finding.id for finding in record.findings]
    assert len(ids) == len(set(ids)), ids
    assert required <= set(ids), ids
    assert not forbidden & set(ids), ids
    if script in MAIN_PROCESS_LOADING:
        assert len({"TD-DATA-002", "TDL101"} & set(ids)) == 1, ids
    for finding in record.findings:  # ranked by upside, largest first
        assert 0.0 <= finding.upside <= 1.0, finding
    upsides = [finding.upside for finding in record.findings]
    assert upsides == sorted(upsides, reverse=True), list(zip(ids, upsides))
    if script in COMPILE_PROBED:  # TD-COMP-003 then claims what compiling measured, or nothing
        # The probe runs only where the bound on the rule's estimate reaches 12%: 17-22% here, under 12% in
        # one CI run, which then probed nothing. Once it runs, the script's 40 steps let it complete.
        compiled = COMPILE_SPEED.of(record)
        assert compiled is None or compiled["complete"], compiled
        for finding in record.findings:
            assert finding.id != "TD-COMP-003" or finding.evidence["upside_basis"] == "measured"
    own = own_step_times_s(proc.stdout, WARMUP_STEPS, timing_steps)
    # Same steps, two clocks: the script's own includes torchdoctor's hooks, which the Record keeps
    # apart (`hooks_s`; they cost more when another process holds the other core). Loose bounds, as
    # on a shared CI core a ~1 ms step jitters by as much.
    with_hooks = [s.wall_s + (s.hooks_s or 0.0) for s in record.steps]
    assert statistics.median(with_hooks) == pytest.approx(statistics.median(own), rel=0.25, abs=2e-3)


@pytest.mark.slow
def test_anomaly_detection_switched_on_every_step_is_held_off_measured_and_claimed_as_measured(tmp_path):
    """The tabular autoencoder calls `set_detect_anomaly(True)` after each optimizer step: the probe
    holds the mode off in its blocks all the same, and TD-COMP-007 claims what it measured there."""
    probing = ["--warmup-steps", "2", "--steps", "6", "--profile-wait", "0", "--profile-warmup", "1",
               "--profile-active", "1"]
    proc, record = diagnose(tmp_path, SCRIPTS / "tabular_autoencoder.py", ["--steps", "60"], probing)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    probe = ANOMALY.of(record)
    assert probe["complete"], probe
    # How much faster the step is with the mode off depends on the machine's load (x2.8 measured here), so
    # only the claim's arithmetic is held: TD-COMP-007 claims what the probe measured, whatever it was.
    finding = next(finding for finding in record.findings if finding.id == "TD-COMP-007")
    assert finding.evidence["upside_basis"] == "measured"
    assert finding.upside == pytest.approx(max(0.0, 1 - 1 / probe["speedup"]), abs=1e-3)
