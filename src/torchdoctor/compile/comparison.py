"""`record.compile.comparison`: the eager-vs-compiled comparison, as a frozen value.

JSON contract (written by `torchdoctor.compile.compare.compare_eager_compiled`, documented in
docs/compile.md, "JSON"): read back with `Comparison.from_dict`; `to_dict` writes the same keys in
the same order. A key a hand-written Record lacks reads as its default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchdoctor.jsonfields import json_of, value_of


@dataclass(frozen=True, slots=True, kw_only=True)
class ComparisonVerdict:
    """`RunsVerdict.to_dict()` of `torchdoctor.bench.compare_runs` (B compiled against A eager): the
    verdict on the runs' mean steps (`ratio` < 1: compiled is faster), its interval, and how the
    runs of each side agreed. `verdict` is "no clear difference" unless `decided`."""

    verdict: str
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    noise_floor: float | None = None
    min_detectable_effect: float | None = None
    n_a: int | None = None
    n_b: int | None = None
    a_run_means: tuple[float, ...] = ()
    b_run_means: tuple[float, ...] = ()
    a_kept: tuple[int, ...] = ()
    b_kept: tuple[int, ...] = ()
    spread: float | None = None
    corroborated: bool | None = None
    separated: bool | None = None
    decided: bool | None = None
    paired: bool | None = None
    ci_across_runs: tuple[float, ...] | None = None
    """`[low, high]`: the bootstrap interval widened by the run-to-run scatter; None while unknown."""
    from_scatter: bool | None = None
    """Whether the interval is the scatter of the runs' means alone."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorChange:
    """One operator of the eager trace against the compiled one, per step."""

    name: str
    count_per_step_a: float | None = None
    count_per_step_b: float | None = None
    us_per_step_a: float = 0.0
    us_per_step_b: float = 0.0
    delta_us_per_step: float | None = None
    status: str
    """"added", "removed" (fused away), "same", "faster" or "slower"."""


@dataclass(frozen=True, slots=True)
class OperatorChanges:
    """The operators torch.compile fused away, the ones it added, those that remain (each the
    largest changes first), and the whole trace diff (`TraceDiff.to_dict()`, kept as written)."""

    fused_away: tuple[OperatorChange, ...] = ()
    added: tuple[OperatorChange, ...] = ()
    remaining: tuple[OperatorChange, ...] = ()
    diff: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Eager runs against compiled runs of one script: step times, verdict, compile time, payoff."""

    schema_version: int | None = None
    eager_run_id: str | None = None
    compiled_run_id: str | None = None
    eager_run_ids: tuple[str, ...] = ()
    compiled_run_ids: tuple[str, ...] = ()
    rounds: int | None = None
    eager_step_s: float | None = None
    compiled_step_s: float | None = None
    verdict: ComparisonVerdict
    compile_time_s: float | None = None
    payoff_steps: float | None = None
    """Steps after which the saved time repays the compile time; None unless compiled is faster."""
    operators: OperatorChanges | None = None

    def to_dict(self) -> dict[str, Any]:
        return json_of(self)

    @classmethod
    def from_dict(cls, data: Any) -> Comparison:
        """The comparison of `compare_eager_compiled`'s JSON; RecordFormatError naming a field of the
        wrong type."""
        return value_of(cls, data, "compile.comparison")
