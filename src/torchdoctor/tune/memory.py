"""Peak memory as part of a trial's verdict: a knob that is faster but raises the step's peak
memory by more than `max_memory_growth` is reported with that cost and not kept.

Each run's peak is read from its system sampler (`Record.system`, sampled every 0.2 s through the
timing window): on a GPU the device memory in use (what NVML sees: the caching allocator's
reserve, which is what another job on the GPU cannot use), else the resident memory of the script
and its DataLoader workers. A side's peak is the median over its runs.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from torchdoctor.tune.trial import ACCEPTED, REJECTED, Run, Trial


def run_peak(run: Run) -> tuple[float, str] | None:
    """(peak bytes, "gpu" or "rss") of `run`'s window, or None when its sampler saw none."""
    summary = ((run.record.system or {}).get("summary") or {}) if run.record is not None else {}
    if summary.get("gpu_memory_bytes_max"):
        return float(summary["gpu_memory_bytes_max"]), "gpu"
    if summary.get("rss_bytes_max"):
        return float(summary["rss_bytes_max"]) + float(summary.get("children_rss_bytes_max") or 0.0), "rss"
    return None


def side_peak(runs: Sequence[Run]) -> tuple[float, str] | None:
    """The median peak of the runs that measured one, and what it measures."""
    peaks = [peak for peak in map(run_peak, runs) if peak is not None]
    if not peaks:
        return None
    return statistics.median(bytes_ for bytes_, _ in peaks), peaks[0][1]


def memory_figures(trial: Trial) -> dict[str, Any] | None:
    """The trial's `memory` (docs/tune.md): the candidate's and the reference's peak, in bytes,
    what they measure, and the relative growth; None when either side has no peak."""
    candidate, reference = side_peak(trial.runs), side_peak(trial.reference)
    if candidate is None or reference is None or candidate[1] != reference[1]:
        return None
    return {"peak_bytes": candidate[0], "reference_peak_bytes": reference[0], "source": candidate[1],
            "growth": candidate[0] / reference[0] - 1.0 if reference[0] else None}


def judge_memory(trial: Trial, max_growth: float) -> None:
    """Record the trial's peak memory; an accepted trial that raises the peak by more than
    `max_growth` is rejected, with that cost in its reason."""
    trial.memory = memory_figures(trial)
    growth = (trial.memory or {}).get("growth")
    if trial.status != ACCEPTED or growth is None or growth <= max_growth:
        return
    memory = trial.memory
    trial.status = REJECTED
    trial.reason = (f"raises the peak memory by {growth:.0%} ({_mib(memory['reference_peak_bytes'])} -> "
                    f"{_mib(memory['peak_bytes'])}, {memory['source']}), more than --max-memory-growth "
                    f"{max_growth:.0%} allows (a higher limit keeps it); {trial.reason}")


def _mib(count: float) -> str:
    return f"{count / 2**20:,.0f} MiB"
