"""`torchdoctor tune` on a real script that prints every step: the script's output goes to a log per
run in the tune's folder, never to tune's terminal, and a failed trial names its log and quotes its end."""

from __future__ import annotations

from pathlib import Path

from tests.tune.test_tune_cli import SCRIPTS, _tune


def test_the_scripts_output_goes_to_a_log_per_run_and_a_failed_trial_quotes_it(tmp_path: Path) -> None:
    proc, result = _tune(tmp_path, "--knobs", "num_workers", "--int-trials", "1", "--warmup-steps", "2",
                         "--steps", "6", "--no-repeat-baseline", "--rounds", "1", "--confirm-rounds", "1",
                         "--confirm-max-rounds", "1", "--time-budget", "120", "--", str(SCRIPTS / "chatty.py"))
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout + proc.stderr
    assert "CHATTY-STDOUT" not in printed and "CHATTY-STDERR" not in printed, printed
    logs = sorted((tmp_path / "tune" / result["tune_id"]).glob("run*/script.log"))
    assert len(logs) >= 2  # the baseline's run and the failing trial's
    assert all("CHATTY-STDOUT step 0" in log.read_text() and "CHATTY-STDERR step 0" in log.read_text()
               for log in logs if "CHATTY-FAILURE" not in log.read_text())
    (failed,) = [t for t in result["trials"] if t["status"] == "failed"]
    log = next(log for log in logs if "CHATTY-FAILURE" in log.read_text())
    assert f"the script's output: {log}" in failed["reason"]
    assert failed["reason"].splitlines()[-1] == log.read_text().rstrip().splitlines()[-1]  # its end quoted
    assert str(log) in proc.stdout  # the trial's reason under the table names the log
