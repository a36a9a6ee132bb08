"""The one way figures are written for people: seconds, bytes and shares, in every renderer."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from torchdoctor.record import StepSample


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


def fmt_count(value: float | None) -> str:
    """A count per step: whole counts without a decimal ('20'), others to one decimal ('2.5')."""
    if value is None:
        return "-"
    rounded = round(value, 1)
    return f"{rounded:.0f}" if rounded == int(rounded) else f"{rounded:.1f}"


STEP_PARTS = ("data_wait", "forward", "backward", "optimizer")


def median_step_parts(steps: Sequence[StepSample]) -> dict[str, float] | None:
    """One statistic for a step's anatomy, as the rules read it: the median of each part over the
    timed steps, the median step (`step`), and `other`, what makes up the difference (0 when the
    part medians add up to more than the median step). Shares are these over the median step."""
    if not steps:
        return None
    parts = {part: statistics.median(getattr(s, f"{part}_s") or 0.0 for s in steps) for part in STEP_PARTS}
    step = statistics.median(s.wall_s for s in steps)
    return {**parts, "other": max(0.0, step - sum(parts.values())), "step": step}


def fmt_phase(phase: str | None) -> str:
    """Where in the step a memory peak happened, as words: 'during forward', 'outside the model's
    calls' (the probe's "outside"), '' when unknown."""
    if not phase:
        return ""
    return "outside the model's calls" if phase == "outside" else f"during {phase}"


_STEPS = {
    "optimizer": "a training step (optimizer.step)",
    "backward": "a training step (backward)",
    "marker": "a step marked by torchdoctor.step()",
    "forward": "a call of the outermost module (forward)",
}


def fmt_step(detection: str | None) -> str:
    """Which step a measurement is of, from its step detection ("optimizer", ...): 'a training step
    (optimizer.step)'; 'unknown' when none was detected."""
    return _STEPS.get(detection or "", "unknown")


def fmt_shares(fractions: Sequence[float]) -> list[str]:
    """Fractions that make up a whole as '12.3%' each, rounded so that the written shares add up to
    what the fractions add up to (largest remainder: 33.4% + 33.3% + 33.3%, never 100.1% nor 101.3%)."""
    tenths = [100 * 10 * max(0.0, f) for f in fractions]
    floors = [int(t) for t in tenths]
    missing = round(sum(tenths)) - sum(floors)
    for index in sorted(range(len(tenths)), key=lambda i: floors[i] - tenths[i])[:max(0, missing)]:
        floors[index] += 1
    return [f"{f / 10:.1f}%" for f in floors]


def fmt_rate(value: float | None, unit: str) -> str:
    """'31.1 GFLOP/s', '12.6 GB/s' (decimal prefixes); '-' for a missing figure."""
    if value is None:
        return "-"
    for prefix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f} {prefix}{unit}"
    return f"{value:.0f} {unit}"
