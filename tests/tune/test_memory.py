"""Peak memory in a trial's verdict: each side's peak from its runs' system sampler, and a faster
knob that raises it beyond --max-memory-growth reported with that cost and not kept."""

from __future__ import annotations

from torchdoctor.record import Record
from torchdoctor.tune.memory import judge_memory, run_peak
from torchdoctor.tune.trial import ACCEPTED, REJECTED, Run, Trial

MIB = 2**20


def _run(rss_mib: float | None = None, gpu_mib: float | None = None, workers_mib: float = 0.0) -> Run:
    summary = {"rss_bytes_max": rss_mib * MIB if rss_mib else None, "children_rss_bytes_max": workers_mib * MIB,
               "gpu_memory_bytes_max": gpu_mib * MIB if gpu_mib else None}
    return Run(knobs={}, role="candidate", record=Record(system={"summary": summary}))


def _trial(candidate: list[Run], reference: list[Run]) -> Trial:
    return Trial(index=1, knob="compile", value={"mode": "default"}, knobs={}, status=ACCEPTED,
                 reason="faster side by side: x1.50", runs=candidate, reference=reference, ratio=0.67)


def test_a_runs_peak_is_the_gpu_memory_in_use_else_the_resident_memory_with_its_workers() -> None:
    assert run_peak(_run(rss_mib=300, gpu_mib=2000)) == (2000 * MIB, "gpu")
    assert run_peak(_run(rss_mib=300, workers_mib=200)) == (500 * MIB, "rss")
    assert run_peak(Run(knobs={}, role="candidate", record=Record())) is None


def test_a_faster_knob_within_the_memory_limit_is_kept_with_its_peak_recorded() -> None:
    trial = _trial([_run(rss_mib=330), _run(rss_mib=320)], [_run(rss_mib=300), _run(rss_mib=300)])
    judge_memory(trial, max_growth=0.10)
    assert trial.status == ACCEPTED
    assert trial.memory == {"peak_bytes": 325 * MIB, "reference_peak_bytes": 300 * MIB, "source": "rss",
                            "growth": 325 / 300 - 1}
    assert trial.to_dict()["memory"] == trial.memory  # the JSON's trials[].memory


def test_a_faster_knob_raising_the_peak_beyond_the_limit_is_not_kept_and_says_the_cost() -> None:
    trial = _trial([_run(gpu_mib=3000)], [_run(gpu_mib=2000)])
    judge_memory(trial, max_growth=0.10)
    assert trial.status == REJECTED
    assert trial.reason.startswith("raises the peak memory by 50% (2,000 MiB -> 3,000 MiB, gpu), more than "
                                   "--max-memory-growth 10% allows")
    allowed = _trial([_run(gpu_mib=3000)], [_run(gpu_mib=2000)])
    judge_memory(allowed, max_growth=0.60)
    assert allowed.status == ACCEPTED


def test_a_trial_without_peaks_on_both_sides_is_judged_on_speed_alone() -> None:
    trial = _trial([_run(rss_mib=900)], [Run(knobs={}, role="reference", record=Record())])
    judge_memory(trial, max_growth=0.10)
    assert trial.status == ACCEPTED and trial.memory is None
