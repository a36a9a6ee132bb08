"""The figures of a tune as its reasons print them: step times, speed-ups and their intervals."""

from __future__ import annotations

from typing import Any, Sequence

from torchdoctor.tune.trial import speedup_interval


def ms(seconds: float | None) -> str:
    """A step time in milliseconds, "n/a" when none was measured."""
    return f"{seconds * 1e3:.3g} ms" if seconds else "n/a"


def speed(ratio: float) -> str:
    """A candidate-over-reference time ratio as a speed-up ("x2.00"), "x?" when unknown."""
    return f"x{1 / ratio:.2f}" if ratio and ratio == ratio else "x?"


def speed_ci(verdict: dict[str, Any]) -> str:
    """The speed-up's 95% CI of a RunsVerdict's dict (`trial.speedup_interval`), or why it has none."""
    ci = speedup_interval(verdict)
    return f"95% CI x{ci[0]:.2f}-x{ci[1]:.2f}" if ci else "no CI (too few steps)"


def runs_text(medians: Sequence[float]) -> str:
    """Runs' step times, in milliseconds, comma-separated."""
    return ", ".join(ms(m) for m in medians)
