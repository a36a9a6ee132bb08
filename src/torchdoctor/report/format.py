"""The one way figures are written for people: seconds, bytes and shares, in every renderer."""

from __future__ import annotations


def fmt_seconds(value: float | None) -> str:
    """'1.234 s', '12.34 ms', '56.7 µs' or '812 ns'; '-' for a missing figure."""
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    if value >= 1e-6:
        return f"{value * 1e6:.1f} µs"
    return f"{value * 1e9:.0f} ns"


def fmt_percent(value: float | None) -> str:
    """A fraction as '12.3%'; '-' for a missing figure."""
    return "-" if value is None else f"{100 * value:.1f}%"


def fmt_bytes(value: float | None) -> str:
    """Binary units with two decimals ('33.62 MiB'), whole bytes under 1 KiB; '-' when missing."""
    if value is None:
        return "-"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return f"{int(value)} B"
