"""Peak memory in a trial's verdict: each side's peak from its runs' system sampler, and a faster
knob that raises it beyond --max-memory-growth reported with that cost and not kept."""

from __future__ import annotations

from torchdoctor.record import Record
from torchdoctor.tune.memory import judge_memory, run_peak
from torchdoctor.tune.trial import ACCEPTED, REJECTED, Run, Trial

MIB = 2**20


def _run(rss_mib: float | None = None, gpu_mib: float | None = None, workers_mib: float = 0.0,
         before_mib: float = 300.0) -> Run:
    """A run whose resident memory was `before_mib` before its window (2.0-3.0 s) and peaked at
    `rss_mib` (with `workers_mib` in its workers) within it; or whose GPU memory peaked at `gpu_mib`."""
    samples = {"t_s": [1.8, 2.2, 2.6, 3.2], "rss_bytes": [before_mib * MIB, (rss_mib or before_mib) * MIB,
                                                         before_mib * MIB, before_mib * MIB],
               "children_rss_bytes": [0.0, workers_mib * MIB, 0.0, 0.0]}
    summary = {"gpu_memory_bytes_max": gpu_mib * MIB if gpu_mib else None}
    system = {"window_start_s": 2.0, "window_end_s": 3.0, "samples": samples, "summary": summary}
    return Run(knobs={}, role="candidate", record=Record(system=system))


def _trial(candidate: list[Run], reference: list[Run]) -> Trial:
    return Trial(index=1, knob="compile", value={"mode": "default"}, knobs={}, status=ACCEPTED,
                 reason="faster side by side: x1.50", runs=candidate, reference=reference, ratio=0.67)


def test_a_runs_peak_is_the_gpu_memory_in_use_else_the_resident_memory_its_steps_add() -> None:
    assert run_peak(_run(rss_mib=300, gpu_mib=2000)) == (2000 * MIB, "gpu")
    # 300 MiB held before the window; 400 MiB and 200 MiB in workers at its peak: the steps add 300.
    assert run_peak(_run(rss_mib=400, workers_mib=200)) == (300 * MIB, "rss")
    assert run_peak(Run(knobs={}, role="candidate", record=Record())) is None


def test_memory_held_before_the_steps_is_not_the_steps_peak() -> None:
    # A compiled model's process holds its compiler (490 MiB against 320 MiB) but its steps add alike.
    trial = _trial([_run(rss_mib=560, before_mib=490)], [_run(rss_mib=390, before_mib=320)])
    judge_memory(trial, max_growth=0.10)
    assert trial.status == ACCEPTED and trial.memory["peak_bytes"] == trial.memory["reference_peak_bytes"]


def test_a_faster_knob_within_the_memory_limit_is_kept_with_its_peak_recorded() -> None:
    trial = _trial([_run(rss_mib=1280), _run(rss_mib=1270)], [_run(rss_mib=1200), _run(rss_mib=1200)])
    judge_memory(trial, max_growth=0.10)
    assert trial.status == ACCEPTED
    assert trial.memory == {"peak_bytes": 975 * MIB, "reference_peak_bytes": 900 * MIB, "source": "rss",
                            "growth": 75 / 900}
    assert trial.to_dict()["memory"] == trial.memory  # the JSON's trials[].memory


def test_growth_smaller_than_the_samplers_noise_is_no_cost() -> None:
    trial = _trial([_run(rss_mib=320)], [_run(rss_mib=305)])  # the steps add 20 MiB against 5 MiB
    judge_memory(trial, max_growth=0.10)
    assert trial.status == ACCEPTED


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


def test_dataloader_workers_measured_by_rss_are_recorded_but_not_judged() -> None:
    # Two forked workers whose resident memory is mostly the script's own pages, counted again.
    trial = _trial([_run(rss_mib=310, workers_mib=500)], [_run(rss_mib=304)])
    trial.knob = "num_workers"
    judge_memory(trial, max_growth=0.10)
    assert trial.status == ACCEPTED and trial.memory["peak_bytes"] == 510 * MIB
    assert "share with the script" in trial.memory["not_judged"]
    on_a_gpu = _trial([_run(gpu_mib=3000)], [_run(gpu_mib=2000)])
    on_a_gpu.knob = "num_workers"
    judge_memory(on_a_gpu, max_growth=0.10)
    assert on_a_gpu.status == REJECTED  # device memory is the script's alone
