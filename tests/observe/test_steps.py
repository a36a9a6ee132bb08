"""The step clock: which source wins, how phases follow the step count, what is measured."""

from __future__ import annotations

import pytest

from torchdoctor.observe import steps as steps_module
from torchdoctor.observe.steps import PhaseCallbacks, StepClock


class FakeClock:
    """perf_counter_ns that advances only when told to."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def fake_time(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(steps_module.time, "perf_counter_ns", clock)
    return clock


def make_clock(events: list, warmup=2, timing=3, profile=2) -> StepClock:
    def note(name):
        return lambda *args: events.append((name, *args))

    return StepClock(warmup, timing, profile, PhaseCallbacks(
        note("timing_start"), note("timing_end"), note("profile_start"), note("profile_step"),
        note("done"), lambda *a: None))


def test_a_better_source_takes_over_and_its_first_event_ends_step_one(fake_time):
    clock = make_clock([])
    clock.boundary("forward")
    clock.boundary("backward")
    clock.boundary("optimizer")
    assert (clock.source, clock.count) == ("optimizer", 1)
    clock.boundary("backward")  # a less preferred source no longer counts
    clock.boundary("forward")
    assert clock.count == 1


def test_phases_follow_the_step_count_and_only_timed_steps_are_sampled(fake_time):
    events: list = []
    clock = make_clock(events)
    for step in range(1, 8):
        fake_time.now += 10 * step
        clock.current.data_ns = step
        clock.boundary("optimizer")
    names = [e[0] for e in events]
    assert names == ["timing_start", "timing_end", "profile_start", "profile_step", "profile_step", "done"]
    assert [wall for wall, _ in clock.samples] == [30, 40, 50]
    assert [parts.data_ns for _, parts in clock.samples] == [3, 4, 5]
    assert clock.done and clock.window_ns == 120


def test_boundaries_after_the_end_are_ignored(fake_time):
    clock = make_clock([], profile=0)
    for _ in range(10):
        clock.boundary("marker")
    assert clock.count == 5 and clock.done


@pytest.mark.parametrize("profile", [0, 2, 6])
def test_the_output_sample_takes_the_steps_after_the_timing_window_beside_the_profiler(fake_time, profile):
    """tune's numerics sample costs operators of its own: never in a timed step."""
    events: list = []
    clock = make_clock(events, warmup=2, timing=3, profile=profile)
    clock.capture_steps = 4
    sampled, timed = [], []
    for step in range(1, 20):  # the step in progress is `step`; its end is the boundary
        if clock.in_capture_window():
            sampled.append(step)
        samples = len(clock.samples)
        clock.boundary("optimizer")
        if len(clock.samples) > samples:
            timed.append(step)
    assert timed == [3, 4, 5] and sampled == [6, 7, 8, 9]
    assert clock.done and [e[0] for e in events].count("profile_step") == profile
    assert clock.count == 2 + 3 + max(profile, 4)


def test_evaluation_forwards_before_the_first_training_step_are_held_not_counted(fake_time):
    """nanoGPT evaluates under no_grad before its first optimizer step: those forwards are neither
    the steps counted nor the windows' steps; the first optimizer step starts the count."""
    events: list = []
    clock = make_clock(events)
    for _ in range(40):
        clock.boundary("forward", evaluation=True)
    assert (clock.source, clock.count, clock.held, events) == (None, 0, 40, [])
    clock.boundary("forward")  # the training forward, then its backward and optimizer step
    clock.boundary("backward")
    clock.boundary("optimizer")
    assert (clock.source, clock.count, clock.note) == ("optimizer", 1, None)


def test_the_wait_for_a_training_step_is_bounded_and_said(fake_time):
    clock = make_clock([])
    clock.evaluation_wait = 3
    for _ in range(5):
        clock.boundary("forward", evaluation=True)
    assert (clock.source, clock.count, clock.held) == ("forward", 2, 3)
    assert "no training step" in clock.note and "first 3 forwards" in clock.note


def test_forwards_of_an_inference_script_count_at_once(fake_time):
    """Without an optimizer the hooks never report an evaluation forward: the forwards are the steps."""
    clock = make_clock([])
    for _ in range(3):
        clock.boundary("forward")
    assert (clock.source, clock.count, clock.held, clock.note) == ("forward", 3, 0, None)


def test_evaluation_forwards_after_the_count_began_are_counted_by_their_source(fake_time):
    clock = make_clock([])
    clock.boundary("optimizer")
    clock.boundary("forward", evaluation=True)
    assert (clock.source, clock.count, clock.held) == ("optimizer", 1, 0)
