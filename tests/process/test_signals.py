"""Signals are named as a shell names them, and a number Python does not name still reads."""

from __future__ import annotations

import signal

from torchdoctor.process.signals import signal_name


def test_a_known_signal_has_its_name_and_an_unknown_one_its_number():
    assert signal_name(signal.SIGTERM) == "SIGTERM"
    assert signal_name(999) == "signal 999"
