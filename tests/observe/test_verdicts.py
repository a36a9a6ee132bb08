"""What the Record's exit says happened, decided from one rank's results (no subprocess)."""

from __future__ import annotations

from torchdoctor.observe.summary import decide_exit

CONFIG = {"warmup_steps": 2, "timing_steps": 6}
IMPORT_ERROR = ('Traceback (most recent call last):\n  File "train.py", line 2, in <module>\n'
                "    import lightning\nModuleNotFoundError: No module named 'lightning'\n")


def _result(how, code, traceback=None):
    return {"how": how, "code": code, "traceback": traceback, "step_detection": None, "steps": [],
            "steps_seen": 0}


def test_a_crash_before_the_first_step_shows_the_scripts_own_exception():
    info = decide_exit(_result("script_error", 1, IMPORT_ERROR), 1, CONFIG)
    assert (info.status, info.reason) == (1, "script_error")
    assert info.message.startswith("the script raised ModuleNotFoundError: No module named 'lightning'")
    assert "torchdoctor.step()" not in info.message and info.traceback == IMPORT_ERROR


def test_a_failing_exit_before_the_first_step_says_so():
    info = decide_exit(_result("sys_exit", 2), 2, CONFIG)
    assert info.status == 2 and "exited with code 2 before its first step" in info.message


def test_a_script_that_ends_cleanly_without_steps_is_told_to_mark_them():
    info = decide_exit(_result("script_finished", 0), 0, CONFIG)
    assert info.reason == "no_steps" and "torchdoctor.step()" in info.message
