"""How many DataLoader workers hide a wait on storage: the one estimate that TD-DATA-007 states and
tune's `num_workers` search tries first. It lives here, torch-free, rather than beside the knob
(torchdoctor.knobs imports torch for its patches) so that the diagnosing process, which only reads
a Record, never pays torch's import: its CPU time fell from 4.1-4.4 s to 2.0-2.1 s and its peak
RSS from 258 MB to 76 MB per `diagnose` (three runs each on a small script)."""

from __future__ import annotations

import math
import statistics
from typing import Sequence

MAX_IO_WORKERS = 32


def io_workers_needed(walls_s: Sequence[float], waits_s: Sequence[float], num_workers: int) -> int:
    """Workers that keep a batch ready for a loader that waits on reads. A batch takes `load` to
    arrive: the wait itself when the main process loads, or `num_workers` steps with workers (each
    delivers one batch per that many steps); the step computes for the rest, so ceil(load /
    compute) workers hide the wait. Sleeping workers need no core, so the count may exceed the
    cores; a fixed guess (8 was) overshoots a short wait, and the extra processes then cost more
    than they hide."""
    step, wait = statistics.median(walls_s), statistics.median(waits_s)
    compute = max(step - wait, 1e-6)
    load = num_workers * step if num_workers else wait
    return max(1, min(MAX_IO_WORKERS, math.ceil(load / compute)))


#: TD-DATA-007's thresholds (rules/data.py), which tune's num_workers knob and the observation's
#: workers simulation (observe/probes/handoff.py) read the same way: a typical step waits this share
#: for its batch, and the main thread's CPU time inside its own loading is under this share of it.
WAIT_SHARE, IDLE_WAIT_CPU = 0.10, 0.3
#: With workers: the script's and its workers' CPU use below this % of one core while it waits.
IDLE_CPU_PERCENT = 15.0


def io_workers_cap(cores: int) -> int:
    """The most workers `run --apply` and tune accept on `cores` cores: 4 a core, 16 at least."""
    return max(16, cores * 4)


def loads_on_storage(walls_s: Sequence[float], waits_s: Sequence[float], wait_cpus_s: Sequence[float]) -> bool:
    """num_workers=0 steps that wait on reads: the median step waits WAIT_SHARE or more for its
    batch, and the main thread computes for under IDLE_WAIT_CPU of its waits."""
    if not walls_s or statistics.median(waits_s) < WAIT_SHARE * statistics.median(walls_s):
        return False
    return sum(wait_cpus_s) < IDLE_WAIT_CPU * sum(waits_s)
