"""Peak memory as part of a trial's verdict: a knob that is faster but raises the step's peak
memory by more than `max_memory_growth` is reported with that cost and not kept.

Each run's peak is read from its system sampler (`Record.system`, sampled every 0.2 s): on a GPU
the most device memory in use over the timing window (what NVML sees: the caching allocator's
reserve, which is what another job on the GPU cannot use); on a CPU the resident memory the
steps add, the RSS delta: the most resident memory of the script and its DataLoader workers over
the window less what they held as it began. A process's resident memory also holds what was
loaded before the steps (torch itself, and a compiled model's compiler: the tiny-operator test
script's compiled runs held 490 MB against 320 MB eager, steps alike), which is not the step's
peak. A side's peak is the median over its runs; differences under MIN_BYTES are the sampler's
own noise and never count.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from torchdoctor.environment import SystemSection
from torchdoctor.jsonfields import readable
from torchdoctor.tune.trial import ACCEPTED, REJECTED, Run, Trial

#: Differences of peak memory below this are not a cost (a 0.2 s sampler's resolution of a
#: process's resident memory, allocator pages, Python's arenas).
MIN_BYTES = 32 * 2**20


def run_peak(run: Run) -> tuple[float, str] | None:
    """(peak bytes, "gpu" or "rss") of `run`'s window, or None when its sampler saw none."""
    system = readable(SystemSection.from_dict, run.record.system) if run.record is not None else None
    if system is None:
        return None
    if system.summary is not None and system.summary.gpu_memory_bytes_max:
        return float(system.summary.gpu_memory_bytes_max), "gpu"
    delta = _rss_delta(system)
    return (delta, "rss") if delta is not None else None


def _rss_delta(system: SystemSection) -> float | None:
    """The most resident memory (script and workers) over the window less the last sample taken
    before it began (else its first), or None without samples. A window shorter than the sampling
    interval holds no sample: the first one after it began stands for it."""
    samples, start, end = system.samples, system.window_start_s, system.window_end_s
    times = samples.get("t_s") or ()
    if start is None or end is None or not times:
        return None
    rss, children = samples.get("rss_bytes") or (), samples.get("children_rss_bytes") or ()
    total = [(rss[i] or 0.0) + (children[i] if i < len(children) and children[i] else 0.0)
             for i in range(min(len(times), len(rss)))]
    inside = [i for i, t in enumerate(times[:len(total)]) if t is not None and start <= t <= end]
    after = [i for i, t in enumerate(times[:len(total)]) if t is not None and t > end]
    inside = inside or after[:1]
    if not inside:
        return None
    before = [i for i, t in enumerate(times[:len(total)]) if t is not None and t < start]
    reference = total[before[-1]] if before else total[inside[0]]
    return max(0.0, max(total[i] for i in inside) - reference)


def side_peak(runs: Sequence[Run]) -> tuple[float, str] | None:
    """The median peak of the runs that measured one, and what it measures."""
    peaks = [peak for peak in map(run_peak, runs) if peak is not None]
    if not peaks:
        return None
    return statistics.median(bytes_ for bytes_, _ in peaks), peaks[0][1]


def memory_figures(trial: Trial) -> dict[str, Any] | None:
    """The trial's `memory` (docs/tune.md): the candidate's and the reference's peak, in bytes,
    what they measure, and the growth relative to the reference's peak (at least MIN_BYTES: a
    step that adds next to nothing has no meaningful ratio); None when either side has no peak."""
    candidate, reference = side_peak(trial.runs), side_peak(trial.reference)
    if candidate is None or reference is None or candidate[1] != reference[1]:
        return None
    return {"peak_bytes": candidate[0], "reference_peak_bytes": reference[0], "source": candidate[1],
            "growth": (candidate[0] - reference[0]) / max(reference[0], MIN_BYTES)}


#: Knobs that start DataLoader worker processes: forked from the training process, a worker's
#: resident memory is mostly pages it shares with it (copy-on-write), which RSS counts again, so a
#: CPU run's RSS growth overstates what they cost (4 MiB -> 495 MiB for two workers of the demo).
WORKER_KNOBS = ("num_workers", "persistent_workers", "prefetch_factor")


def judge_memory(trial: Trial, max_growth: float) -> None:
    """Record the trial's peak memory; an accepted trial that raises the peak by more than
    `max_growth` is rejected, with that cost in its reason. A worker knob measured by RSS is
    recorded but not judged (WORKER_KNOBS): the figure counts shared pages once per worker."""
    trial.memory = memory_figures(trial)
    memory = trial.memory or {}
    growth = memory.get("growth")
    if trial.status != ACCEPTED or growth is None or growth <= max_growth \
            or memory["peak_bytes"] - memory["reference_peak_bytes"] < MIN_BYTES:
        return
    if trial.knob in WORKER_KNOBS and memory["source"] == "rss":
        memory["not_judged"] = "worker processes' resident memory counts the pages they share with the script"
        return
    trial.status = REJECTED
    trial.reason = (f"raises the peak memory by {growth:.0%} ({_mib(memory['reference_peak_bytes'])} -> "
                    f"{_mib(memory['peak_bytes'])}, {memory['source']}), more than --max-memory-growth "
                    f"{max_growth:.0%} allows (a higher limit keeps it); {trial.reason}")


def _mib(count: float) -> str:
    return f"{count / 2**20:,.0f} MiB"
