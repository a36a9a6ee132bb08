"""The DataLoader workers that hide a wait on storage, the most a run accepts, and when a loader
without workers waits on reads."""

from __future__ import annotations

import pytest

from torchdoctor.estimates.workers import MAX_IO_WORKERS, io_workers_cap, io_workers_needed, loads_on_storage


@pytest.mark.parametrize(("wait_s", "num_workers", "needed"), [
    (0.75, 0, 3),  # the main process loads: 0.75 s to arrive, 0.25 s of compute to hide it behind
    (0.75, 2, 8),  # two workers each deliver a batch every two steps: 2 s to arrive
    (0.0, 0, 1),  # nothing to hide: at least one
    (1.0, 0, MAX_IO_WORKERS),  # a step that only waits: no more than the ceiling
])
def test_the_workers_needed_keep_a_batch_ready_for_the_step_to_take(wait_s, num_workers, needed):
    assert io_workers_needed([1.0, 1.0, 1.0], [wait_s] * 3, num_workers) == needed


def test_the_cap_is_four_workers_a_core_and_sixteen_at_least():
    assert io_workers_cap(2) == 16 and io_workers_cap(8) == 32


@pytest.mark.parametrize(("wait_s", "wait_cpu_s", "on_storage"), [
    (0.5, 0.1, True),  # half the step waiting, the main thread mostly idle meanwhile: reads
    (0.5, 0.2, False),  # the main thread computes during its loading: not a wait on storage
    (0.05, 0.0, False),  # too short a wait to matter
])
def test_a_loader_waits_on_storage_when_its_waits_are_long_and_idle(wait_s, wait_cpu_s, on_storage):
    assert loads_on_storage([1.0, 1.0], [wait_s, wait_s], [wait_cpu_s, wait_cpu_s]) is on_storage


def test_no_steps_are_no_wait_on_storage():
    assert loads_on_storage([], [], []) is False
