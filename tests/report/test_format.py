"""Figures are written one way in every renderer: seconds, bytes and shares."""

from __future__ import annotations

import pytest

from torchdoctor.report.format import fmt_bytes, fmt_percent, fmt_seconds


@pytest.mark.parametrize(("seconds", "text"), [
    (2.5, "2.500 s"), (0.01234, "12.34 ms"), (5.67e-5, "56.7 µs"), (8.12e-7, "812 ns"), (None, "-"),
])
def test_seconds_take_the_unit_that_keeps_them_readable(seconds, text):
    assert fmt_seconds(seconds) == text


@pytest.mark.parametrize(("size", "text"), [
    (33.62 * 2**20, "33.62 MiB"), (3 * 2**30, "3.00 GiB"), (1536, "1.50 KiB"), (512, "512 B"), (None, "-"),
])
def test_bytes_use_binary_units_with_two_decimals(size, text):
    assert fmt_bytes(size) == text


def test_shares_are_percent_with_one_decimal():
    assert fmt_percent(0.4567) == "45.7%"
    assert fmt_percent(None) == "-"
