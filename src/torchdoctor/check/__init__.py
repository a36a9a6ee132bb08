"""`torchdoctor check`: a performance gate for CI. Observes side A (a git ref checked out into a
temporary worktree, another interpreter, or a stored baseline) and side B (the code as it is now),
decides with `torchdoctor.bench` whether B is slower beyond `max_slowdown` (and its peak memory
beyond `max_memory_growth`), and locates a regression with one profiled window per side.

Method (docs/check.md): one unmeasured pilot observation per side first (it catches a side that
fails before any time is spent, and tells the batch sizes); then interleaved rounds
(`bench.run_interleaved`): each round observes A, B and A again (the A-vs-A control), in a seeded
random order, each a fresh process (forked from a server that has imported torch, unless
`fork_server` is off) timing `steps` steps after `warmup_steps`; a sample is the mean step time
of one observation (its pace, `check.figures.observation_figures`). The gate's stopping rule
(`check.gate.gate_settled`) ends a clear case at the first look. A stored baseline cannot be
interleaved: its observations are compared unpaired with rounds of B, at the same looks.

A mode runs with the `Collaborators` it is given (progress display, stop log, fork servers,
baseline store) and returns a `CheckResult`; rendering and storing it is the caller's.
"""

from __future__ import annotations

from torchdoctor.check.against_baseline import compare_with_baseline
from torchdoctor.check.against_python import compare_with_python
from torchdoctor.check.against_ref import compare_with_ref
from torchdoctor.check.baseline import BaselineStore
from torchdoctor.check.config import DEFAULT_POLICY, CheckOptions
from torchdoctor.check.context import CheckProgress, Collaborators
from torchdoctor.check.decisions import ERROR, EXIT_CODES, PASS, REGRESSION, SAVED, UNDECIDED
from torchdoctor.check.location import Location
from torchdoctor.check.metric import Metric
from torchdoctor.check.result import SCHEMA_VERSION, CheckResult
from torchdoctor.check.save_baseline import record_baseline
from torchdoctor.check.servers import ForkServers

__all__ = [
    "DEFAULT_POLICY", "ERROR", "EXIT_CODES", "PASS", "REGRESSION", "SAVED", "SCHEMA_VERSION", "UNDECIDED",
    "BaselineStore", "CheckOptions", "CheckProgress", "CheckResult", "Collaborators", "ForkServers", "Location",
    "Metric", "compare_with_baseline", "compare_with_python", "compare_with_ref", "record_baseline",
]
