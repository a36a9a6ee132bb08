"""The thread count TD-COMP-009's and TD-COMP-031's fixes name, and so the count the threads probe tries.

One definition for both: the probe (in the observed process) measures exactly the fix the rule
(in torchdoctor's own process, which never imports torch: this module does not either) will
recommend. The count comes from the DataLoader workers' CPU measured over the timed window, as the
rule reads it: assuming every worker busy, the probe tried one thread on a third-party autoencoder
whose two workers were idle, where the fix named two, so the rule fell back to a ceiling of x1.96
for a fix that measured about x1.1 (docs/field.md).

Fewer threads than cores (TD-COMP-043) are tried with one a core the busy workers leave free, only
where the script chose the count itself: a count the environment sets (OMP_NUM_THREADS,
MKL_NUM_THREADS) is the launcher's choice (torchrun sets 1 per process beside others; a scheduler
sets the cores it allots), which the fix would have to change there.

Beside other processes that take a material share of the machine (TD-COMP-031), the cores they
keep busy count as the busy workers' do: two intra-op threads on two cores beside two busy
processes measured 5-16x slower a step than one (a small transformer language model; an OpenMP
thread descheduled by a neighbour stalls the others at every operator's barrier).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: A DataLoader worker on CPU at least this share of its wall time competes for a core.
WORKER_BUSY = 0.5
#: Threads + busy workers' (+ other processes') cores above the cores x this: they fight for the cores.
OVERSUBSCRIBED = 1.25


def competing(threads: int, cores: int, busy_cores: float) -> bool:
    """Whether `threads` intra-op threads beside `busy_cores` cores kept busy by others (DataLoader
    workers, other processes) want more than OVERSUBSCRIBED x the `cores`."""
    return threads + busy_cores > cores * OVERSUBSCRIBED


def busy_worker_cores(workers: int, worker_cores: float) -> float:
    """The cores the DataLoader workers take from the step: the cores they measurably kept busy
    (CPU time over wall time), or 0 when they were idle (on CPU under WORKER_BUSY of their time:
    sleeping on storage, or waiting for a full queue to drain)."""
    return worker_cores if workers and worker_cores >= WORKER_BUSY * workers else 0.0


def threads_in_fix(threads: int, cores: int, busy_cores: float) -> int:
    """TD-COMP-009's thread count: one per core the busy workers leave free, at least one, never
    more than the script has."""
    return max(1, min(threads, cores - math.ceil(busy_cores)))


def threads_to_try(threads: int, cores: int, busy_cores: float, other_cores: float = 0.0) -> int | None:
    """The count to probe: TD-COMP-009's fix when the intra-op threads alone outnumber the cores (the
    cores other processes' material load, `other_cores`, 0 when it is not material, keeps busy
    counted as the busy workers' are); else TD-COMP-031's when that load with the busy workers
    leaves the threads fewer cores than they are; else None.
    Busy workers alone do not start a probe: every DataLoader with workers beside one thread
    a core would pay 16 steps (seconds on a slow loader; the test suite took 25% longer) for a rule
    that is silent when its workers are idle, as they mostly are; that case keeps the ceiling. A
    busy machine does: only then, and its load is what the probe measures against."""
    if threads > cores:
        return threads_in_fix(threads, cores, busy_cores + other_cores)
    if other_cores and competing(threads, cores, busy_cores + other_cores):
        keep = threads_in_fix(threads, cores, busy_cores + other_cores)
        return keep if keep < threads else None
    return None


#: The environment variables through which a launcher sets the intra-op threads.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def set_by_environment(threads: int, env_vars: Mapping[str, str]) -> bool:
    """Whether `threads` is the count a THREAD_VARIABLES variable of `env_vars` sets."""
    return any(env_vars.get(name, "").strip() == str(threads) for name in THREAD_VARIABLES)


def more_threads(threads: int, cores: int, busy_cores: float) -> int | None:
    """TD-COMP-043's count: one thread per core the busy workers leave free, when that is more than
    the script's `threads`; None otherwise."""
    free = cores - math.ceil(busy_cores)
    return free if free > threads else None
