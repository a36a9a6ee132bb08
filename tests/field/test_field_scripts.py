"""The field suite: recreations of the scripts of issue 15 (pytorch/examples imagenet `--dummy`,
dcgan `--dataset fake`, time_sequence_prediction's LBFGS, regression; a Hugging Face Trainer on a
tiny GPT-2; a Lightning module; a slow `__getitem__`; a tabular autoencoder that switches anomaly
detection on every step), each run unmodified under `torchdoctor
diagnose` in a subprocess: the step detection, shares adding to 1, the top finding, and the median
step against the script's own printed timing of the same steps.

One intra-op thread (OMP_NUM_THREADS=1, see helpers.ENV), as the figures of docs/field.md.
"""

from __future__ import annotations

import statistics

import pytest

from tests.field.helpers import SCRIPTS, assert_shares_add_up, diagnose, own_step_times_s

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


# script, its arguments, the step detection, the ids the top finding may have (None: no finding).
# imagenet's, dcgan's, the Trainer's and Lightning's leaders depend on how busy the two cores are (two workers
# keep up with the tiny CNN only when they get a core): each listed was measured; any other leader fails.
# Lightning's TDL101 (a static hint) leads when neither runtime finding passes its threshold: seen once in a
# full local run (session 16), its 28% outside the phases then under TD-COMP-013's 20%.
FIELD = [
    pytest.param("imagenet_dummy", ["--dummy", "--workers", "2", "--steps", "14"], "optimizer", {None, "TD-DATA-003"},
                 marks=pytest.mark.slow, id="imagenet_dummy"),
    pytest.param("dcgan_fake", ["--dataset", "fake", "--workers", "2", "--steps", "14"], "optimizer",
                 {None, "TD-COMP-003", "TD-DATA-003"}, marks=pytest.mark.slow, id="dcgan_fake"),
    pytest.param("time_sequence_prediction", ["--steps", "14"], "optimizer", {None}, id="time_sequence_prediction"),
    pytest.param("regression", ["--steps", "210"], "backward", {"TD-COMP-013"}, id="regression"),
    pytest.param("hf_trainer_gpt2", ["--steps", "40"], "optimizer", {"TD-COMP-003", "TD-COMP-013"},
                 marks=pytest.mark.slow, id="hf_trainer_gpt2"),
    pytest.param("lightning_module", ["--steps", "14"], "optimizer", {"TD-COMP-013", "TD-DATA-002", "TDL101"},
                 marks=pytest.mark.slow,
                 id="lightning_module"),
    pytest.param("slow_getitem", ["--steps", "14"], "optimizer", {"TD-DATA-007"}, id="slow_getitem"),
    pytest.param("tabular_autoencoder", ["--steps", "14"], "optimizer", {"TD-COMP-007"}, id="tabular_autoencoder"),
]


@pytest.mark.parametrize("script, args, detection, top_finding", FIELD)
def test_a_field_script_is_diagnosed_with_its_steps_shares_and_top_finding(tmp_path, script, args, detection,
                                                                          top_finding):
    timing_steps = LONG_TIMING_STEPS.get(script, TIMING_STEPS)
    proc, record = diagnose(tmp_path, SCRIPTS / f"{script}.py", args, options(script))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert record.exit.reason == "completed"
    assert record.step_detection == detection
    assert record.summary.num_steps == timing_steps
    assert_shares_add_up(record)
    ranked = [finding.id for finding in record.findings]
    assert (ranked[0] if ranked else None) in top_finding, ranked
    if script in COMPILE_PROBED:  # TD-COMP-003 then claims what compiling measured, or nothing
        # The probe runs only where the bound on the rule's estimate reaches 12%: 17-22% here, under 12% in
        # one CI run, which then probed nothing. Once it runs, the script's 40 steps let it complete.
        assert record.compile_probe is None or record.compile_probe["complete"], record.compile_probe
        for finding in record.findings:
            assert finding.id != "TD-COMP-003" or finding.evidence["upside_basis"] == "measured"
    own = own_step_times_s(proc.stdout, WARMUP_STEPS, timing_steps)
    # Same steps, two clocks; loose bounds, as on a shared CI core a ~1 ms step jitters by as much.
    assert record.summary.step_s == pytest.approx(statistics.median(own), rel=0.25, abs=2e-3)


@pytest.mark.slow
def test_anomaly_detection_switched_on_every_step_is_held_off_measured_and_claimed_as_measured(tmp_path):
    """The tabular autoencoder calls `set_detect_anomaly(True)` after each optimizer step: the probe
    holds the mode off in its blocks all the same, and TD-COMP-007 claims what it measured there."""
    probing = ["--warmup-steps", "2", "--steps", "6", "--profile-wait", "0", "--profile-warmup", "1",
               "--profile-active", "1"]
    proc, record = diagnose(tmp_path, SCRIPTS / "tabular_autoencoder.py", ["--steps", "60"], probing)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    probe = record.anomaly_probe
    assert probe["complete"], probe
    assert probe["step_s_anomaly_on"] > 1.3 * probe["step_s_anomaly_off"]  # x2.8 measured here
    finding = record.findings[0]
    assert finding.id == "TD-COMP-007" and finding.evidence["upside_basis"] == "measured"
    assert finding.upside == pytest.approx(1 - 1 / probe["speedup"], abs=1e-3)
