"""Stop signals in torchdoctor's own process: passed on while a child runs, held (never raised)
while it saves, and the command's exit status says a stop arrived."""

from __future__ import annotations

import os
import signal

from torchdoctor.launch.stops import StopLog, forwarding, held_stops


def test_a_held_stop_is_recorded_not_raised_and_the_handlers_are_restored(capsys):
    before = signal.getsignal(signal.SIGINT)
    with held_stops() as stops:
        os.kill(os.getpid(), signal.SIGINT)  # would be a KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)  # would end the process
    assert stops.held == [signal.SIGINT, signal.SIGTERM] and stops.first == signal.SIGINT
    assert "SIGINT received; saving what was measured" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before


def test_a_stop_while_forwarding_goes_to_the_child_and_nested_holds_share_one_log():
    sent: list[int] = []
    with held_stops() as outer:
        with forwarding(sent.append) as inner:
            os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGINT)
    assert inner is outer and sent == [signal.SIGHUP]
    assert outer.forwarded == [signal.SIGHUP] and outer.held == [signal.SIGINT]


def test_the_exit_status_is_the_records_unless_a_stop_came_after_a_clean_run():
    assert StopLog().exit_status(0) == 0
    assert StopLog(forwarded=[signal.SIGINT]).exit_status(130) == 130
    assert StopLog(held=[signal.SIGINT]).exit_status(130) == 130  # the Record already says it
    assert StopLog(held=[signal.SIGTERM]).exit_status(0) == 143
