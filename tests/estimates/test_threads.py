"""The thread count TD-COMP-009's and TD-COMP-031's fixes name and the threads probe tries: one per
core the busy DataLoader workers (and other processes' material load) leave free, probed when the
intra-op threads outnumber the cores, or the cores left beside a busy machine."""

from __future__ import annotations

import pytest

from torchdoctor.estimates.threads import busy_worker_cores, more_threads, set_by_environment, threads_to_try


@pytest.mark.parametrize(("threads", "cores", "busy_cores", "tried"), [
    (8, 2, 0.0, 2),  # the zoo's compute_threads; also idle workers (docs/field.md's autoencoder: 1 tried before)
    (2, 2, 2.0, None),  # busy workers alone do not start a probe (TD-COMP-009 keeps its ceiling there)
    (4, 2, 0.8, 1),  # threads above the cores and a busy worker: the fix keeps a core for it
    (4, 2, 3.9, 1),  # never fewer than one
    (4, 8, 2.0, None),
])
def test_the_probe_tries_the_count_the_rules_fix_would_set(threads, cores, busy_cores, tried):
    assert threads_to_try(threads, cores, busy_cores) == tried


@pytest.mark.parametrize(("workers", "worker_cores", "busy"), [
    (2, 0.02, 0.0),  # idle workers (cheap batches) take no core from the step
    (2, 0.99, 0.0),  # under half of each worker's time on CPU: still idle
    (2, 1.2, 1.2),  # busy: the cores they measurably use
    (0, 0.7, 0.0),  # children that are not DataLoader workers do not count
])
def test_workers_count_only_when_busy_and_only_with_the_cores_they_use(workers, worker_cores, busy):
    assert busy_worker_cores(workers, worker_cores) == busy


@pytest.mark.parametrize(("threads", "cores", "busy_cores", "others", "tried"), [
    (2, 2, 0.0, 1.1, 1),  # two threads on two cores beside other processes using 1.1: one thread
    (2, 2, 0.0, 0.0, None),  # a quiet machine (or a load under the material share): no probe
    (2, 2, 0.0, 0.4, None),  # 2.4 cores wanted, not above 1.25 x 2
    (1, 2, 0.0, 1.9, None),  # one thread is already the fewest
    (6, 8, 0.0, 6.0, 2),  # beside six busy cores of eight, the two they leave
    (8, 2, 0.0, 1.5, 1),  # threads beyond the cores: TD-COMP-009's count, the others' cores counted too
    (32, 2, 0.0, 0.0, 2),  # ... and one a core on a quiet machine
])
def test_beside_a_busy_machine_the_probe_tries_the_cores_the_others_leave(threads, cores, busy_cores, others, tried):
    assert threads_to_try(threads, cores, busy_cores, others) == tried


@pytest.mark.parametrize(("threads", "cores", "busy_cores", "tried"), [
    (1, 2, 0.0, 2),  # set_num_threads(1) on two free cores: one a core
    (1, 8, 2.5, 5),  # a core kept for each busy worker's share, rounded up
    (2, 2, 0.0, None),  # one a core already
    (1, 2, 1.0, None),  # the busy worker's core taken: nothing more to try
])
def test_fewer_threads_than_the_free_cores_are_tried_with_one_a_core(threads, cores, busy_cores, tried):
    assert more_threads(threads, cores, busy_cores) == tried


def test_a_thread_count_the_environment_sets_is_the_launchers_choice():
    assert set_by_environment(1, {"OMP_NUM_THREADS": "1"})
    assert set_by_environment(4, {"MKL_NUM_THREADS": " 4 "})
    assert not set_by_environment(1, {"OMP_NUM_THREADS": "2"})
    assert not set_by_environment(1, {})
