"""End to end, real scripts in real subprocesses: the claimed speed-up survives a disturbed first
baseline, a knob holds against the script that undoes it and the diff edits that very line, and
an evaluation loop without a loss has its outputs checked."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchdoctor.capability import cpu_precision, host_isa_flags

from tests.observe.helpers import WIDE_ENV
from tests.tune.test_tune_cli import SCRIPTS, _tune

#: Each test tunes a real script: a handful of fresh runs, minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: Short runs; the protocol's mechanics are those of the defaults.
SHORT = ["--warmup-steps", "3", "--steps", "20"]
ONE_THREAD = {**WIDE_ENV, "OMP_NUM_THREADS": "1"}


def _stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=0.1) as connection:
            return connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet, or locked
        return 0


def offers_edit(result: dict, knob: str, edit: str) -> bool:
    """Whether tune's diff makes `knob`'s change permanent with `edit`. A knob whose effect depends on
    what else runs on the cores (threads, workers) and that was decided while other processes kept
    the machine busy (a neighbour the test does not control, e.g. CI's) is offered as no permanent
    edit, and the result's `search.load_dependent` says so and why: then the diff must not carry it."""
    notes = [note for note in result["search"]["load_dependent"] if note["knob"] == knob]
    if notes:
        assert "no permanent edit is offered" in notes[0]["note"] and notes[0]["load"]["loaded"], notes
        assert edit not in (result["diff"] or ""), result["diff"]
        return False
    assert edit in result["diff"], (result["diff"], result["search"]["load_dependent"])
    return True


def _hogs(seconds: int) -> list[subprocess.Popen]:
    """Two busy processes (one per core of a 2-core machine), bounded in time by `timeout`, each
    in its own process group so that stopping it stops the busy loop too."""
    return [subprocess.Popen(["timeout", str(seconds), sys.executable, "-c", "while True: pass"],
                             start_new_session=True) for _ in range(2)]


def _stop(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        try:
            os.killpg(hog.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        hog.wait()


@pytest.mark.serial  # its hogs take both cores from a neighbouring test, whose load in turn outlasts them (CI:
# the hogged run kept nothing while the quiet one kept num_workers=1 at x1.27). Alone in CI it once kept
# nothing beside a quiet x1.15, "not measurably faster": most likely agreeing runs whose spread hid the
# effect (the log cut the figures), which are now judged by their ranks too.
def test_a_cpu_hog_during_the_first_baseline_does_not_change_the_claimed_speedup(tmp_path: Path) -> None:
    # No span asked of the confirmation (2 to 6 rounds until precise): what is tested is the first baseline's
    # disturbance, and the two tunes stay within CI's time (tests/tune/test_search.py tests the span).
    options = ["--knobs", "num_workers", "--int-trials", "1", "--rounds", "1", "--confirm-rounds", "2",
               "--confirm-max-rounds", "6", "--confirm-span", "0", *SHORT, "--", str(SCRIPTS / "sleepy_loader.py")]
    # One intra-op thread: with two, the script's one worker made its steps 8.7-16.5 ms in six runs on an idle
    # machine (12.5 ms without it): two spinning threads and the worker on two cores. With one, 8.6-9.5 ms.
    (tmp_path / "quiet").mkdir()
    quiet_proc, quiet = _tune(tmp_path / "quiet", *options, timeout=400, env=ONE_THREAD)
    assert quiet_proc.returncode == 0, quiet_proc.stderr

    hogged = tmp_path / "hogged"
    hogged.mkdir()
    command = [sys.executable, "-m", "torchdoctor", "tune", "--json", str(hogged / "tune.json"),
               "--store", str(hogged / "runs.db"), *options]
    proc = subprocess.Popen(command, cwd=hogged, env=ONE_THREAD, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    hogs = _hogs(240)
    try:
        deadline = time.monotonic() + 240
        while _stored_runs(hogged / "runs.db") < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)  # the hogs run until the first baseline run is stored
    finally:
        _stop(hogs)
    stdout, stderr = proc.communicate(timeout=400)
    assert proc.returncode == 0, stderr
    import orjson

    result = orjson.loads((hogged / "tune.json").read_bytes())
    # The loader sleeps (I/O-bound): the diagnosis' suggested count is tried first, beyond the cores.
    assert result["kept"] == quiet["kept"], (result["summary"], quiet["summary"])
    for claim in (quiet, result):
        assert claim["kept"].get("num_workers", 0) >= 1 and claim["confirmed"], claim["summary"]
        assert claim["speedup_ci"][0] <= claim["speedup"] <= claim["speedup_ci"][1]
        offers_edit(claim, "num_workers", f"num_workers={claim['kept']['num_workers']}")
    assert abs(result["speedup"] / quiet["speedup"] - 1) <= 0.2, (result["speedup"], quiet["speedup"])
    # Seeded by the bootstrap (the script is not), its runs repeat identically.
    assert quiet["noise"]["deterministic"] is True and quiet["noise"]["loss_difference"] == 0
    assert "confirmed side by side" in stdout


@pytest.mark.serial  # a threads knob decided beside another busy process is kept out of the diff (load-dependent)
def test_a_script_that_hard_codes_16_threads_is_tuned_to_the_fix_with_that_line_in_the_diff(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "threads", "--int-trials", "1", "--no-repeat-baseline", "--rounds", "1",
                         "--confirm-rounds", "2", "--confirm-max-rounds", "3", *SHORT, "--",
                         str(SCRIPTS / "threads16.py"), timeout=400)
    assert proc.returncode == 0, proc.stderr
    assert result["kept"] == {"threads": 1}, result["summary"] + proc.stdout[-3000:]
    (held,) = result["intercepted"]
    assert held["call"] == "torch.set_num_threads(16)" and held["line"] == 14 and held["file"].endswith("threads16.py")
    if offers_edit(result, "threads", "-torch.set_num_threads(16)\n+torch.set_num_threads(1)\n"):
        assert "threads16.py:14: change `torch.set_num_threads(16)` to use 1" in proc.stdout


def test_a_script_that_hard_codes_anomaly_detection_is_tuned_to_deleting_that_line(tmp_path: Path) -> None:
    # One intra-op thread: two on a busy 2-core machine make single runs stall many times over.
    options = ["--knobs", "no_anomaly_detection", "--no-repeat-baseline", "--rounds", "2", "--confirm-rounds", "2",
               "--confirm-max-rounds", "3", *SHORT, "--", str(SCRIPTS / "anomaly_mlp.py")]
    for attempt in ("first", "again"):
        (tmp_path / attempt).mkdir()
    proc, result = _tune(tmp_path / "first", *options, timeout=600, env=ONE_THREAD)
    if not result["kept"] and "too noisy" in result["summary"]:
        # The honest answer beside a busy test worker (the suite at a load of 2: baseline runs of 1.9, 3.6
        # and 7.3 ms, no two within 15%; or the trial's own runs disagreeing, x0.99-x10.35): tune once
        # more, and that one must keep the fix.
        proc, result = _tune(tmp_path / "again", *options, timeout=600, env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    assert result["kept"] == {"no_anomaly_detection": True}, result["summary"] + proc.stdout[-3000:]
    assert result["intercepted"][0]["line"] == 7
    # The script steps an optimizer: the confirmation's runs were timed by its step hooks alone.
    confirmation = result["confirmation"]
    assert confirmation["steps_only"] is True and "timed by the step hooks alone" in confirmation["how"]
    assert all(run["timed_steps"] >= 20 for run in confirmation["baseline_runs"] + confirmation["best_runs"])
    assert "-torch.autograd.set_detect_anomaly(True)\n" in result["diff"]
    assert "+torch.autograd" not in result["diff"]


def test_an_eval_loop_with_bf16_autocast_has_its_outputs_checked(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "autocast_bf16", "--no-repeat-baseline", "--rounds", "1",
                         "--confirm-rounds", "1", "--confirm-max-rounds", "2", "--warmup-steps", "3", "--steps", "10",
                         "--", str(SCRIPTS / "eval_loop.py"), timeout=400, env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    tried = [t for t in result["trials"] if t["knob"] == "autocast_bf16"]
    if not cpu_precision(host_isa_flags()).bf16:
        # No AVX512-BF16 or AMX on this CPU: the capability table keeps the knob out, so nothing is tried.
        assert tried == [] and "no knob was tried" in result["summary"]
        pytest.skip("this CPU computes no bfloat16 natively: no bf16 trial whose outputs to check")
    numerics = tried[0]["numerics"]
    assert numerics["checked"], numerics
    assert numerics["method"] == "outputs, element-wise (same inputs)"
    assert 0 < numerics["difference"] < 5e-2 and numerics["argmax_agreement"] > 0.9
    assert "bf16" not in result["numerics_unchecked"]
