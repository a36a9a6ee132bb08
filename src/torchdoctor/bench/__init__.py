"""Honest A/B benchmarking: decide whether B is faster than A on a noisy machine.

- `compare_samples(a_s, b_s)`: the decision on two series of times (a bootstrap CI of the ratio
  of medians against a noise floor), for callers that measured already (tuner, `runs compare`).
- `compare_runs(a_runs, b_runs)`: the same decision on whole runs measured in interleaved rounds
  (each run a series of step times): disturbed runs left out, run-to-run spread as noise floor.
- `compare_statements([Variant...])`: statements or callables in this process, on
  torch.utils.benchmark.Timer, interleaved rounds, adaptive stopping.
- `compare_processes([Command...])`: whole processes interleaved A B A B, per-run timeout.
Method and JSON keys: docs/bench.md.
"""

from __future__ import annotations

from torchdoctor.bench.adaptive import BenchResult, Policy, RoundInfo, control_name, run_interleaved
from torchdoctor.bench.errors import (
    BenchInputError,
    MismatchedDevicesError,
    VariantFailedError,
    VariantTimeoutError,
)
from torchdoctor.bench.processes import Command, compare_processes
from torchdoctor.bench.statements import Variant, compare_statements
from torchdoctor.bench.stats import (
    FASTER,
    RUN_TOLERANCE,
    SLOWER,
    TOO_FEW,
    UNCLEAR,
    RunsVerdict,
    Verdict,
    agreeing_runs,
    compare_runs,
    compare_samples,
    geometric_median,
    t_quantile_95,
)

__all__ = [
    "FASTER", "RUN_TOLERANCE", "SLOWER", "TOO_FEW", "UNCLEAR",
    "BenchInputError", "BenchResult", "Command", "MismatchedDevicesError", "Policy", "RoundInfo", "RunsVerdict",
    "Variant", "VariantFailedError", "VariantTimeoutError", "Verdict",
    "agreeing_runs", "compare_processes", "compare_runs", "compare_samples", "compare_statements", "control_name",
    "geometric_median", "run_interleaved", "t_quantile_95",
]
