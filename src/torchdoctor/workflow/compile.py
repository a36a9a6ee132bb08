"""`torchdoctor compile`'s composition root.

The script as written first. If it compiles something: again with Dynamo disabled (the eager
baseline). If not, it is the eager baseline, and each requested mode (torchdoctor.compile.modes;
"default" when none is asked) is a further run with the compile knob. With `rounds` > 1 each
comparison gets that many runs a side, in alternating order (A B, B A, A B, ...), so that a drift
of the machine's load weighs on both sides alike and the verdict rests on runs that agree.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from torchdoctor.compile.advice import advise
from torchdoctor.compile.compare import EAGER_ENV, compare_eager_compiled
from torchdoctor.compile.comparison import Comparison
from torchdoctor.compile.modes import mode_row, not_applicable, variants
from torchdoctor.compile.report import CompileReport
from torchdoctor.jsonfields import readable
from torchdoctor.launch import LaunchConfig
from torchdoctor.record import Record
from torchdoctor.rules import diagnose_record
from torchdoctor.workflow.observation import ObserveRequest, observe_with_progress, store_records

#: 2: `advice` holds Findings (torchdoctor.finding, TD-COMP-021..024) instead of {code, message, fix}.
#: 3: `rounds`; `comparison` schema 2 (several runs a side, docs/compile.md).
SCHEMA_VERSION = 3

#: observes one request (stored or not, as the command was asked)
Observe = Callable[[ObserveRequest], Record]


def interleaved(first: Record, again: Callable[[], Record], other: Callable[[], Record],
                rounds: int) -> tuple[list[Record], list[Record]]:
    """`first` and `rounds - 1` more runs of its side (`again`), and `rounds` runs of `other`, in
    alternating order: first, other; other, again; again, other; ..."""
    mine, theirs = [first], [other()]
    for round_index in range(1, rounds):
        for side in ((other, again) if round_index % 2 else (again, other)):
            (theirs if side is other else mine).append(side())
    return mine, theirs


def _compared(eager_runs: list[Record], compiled_runs: list[Record]) -> dict[str, Any] | None:
    """The comparison of the runs that have steps, None when a side has none."""
    eager, compiled = [r for r in eager_runs if r.steps], [r for r in compiled_runs if r.steps]
    return compare_eager_compiled(eager, compiled) if eager and compiled else None


@dataclass(frozen=True, slots=True)
class CompilePlan:
    """What is compared with eager: the knob's variants (`modes`, None: ["default"]; each also with
    dynamic=True when `dynamic`; compiled by `backend`), and `rounds` runs a side of each comparison
    (the CLI's default is 3: bench.stats.SEPARATION_RUNS)."""

    modes: Sequence[str] | None = None
    dynamic: bool = False
    backend: str = "inductor"
    rounds: int = 1

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {self.rounds}")


def _self_compiled(compiled: Record, request: ObserveRequest, rounds: int,
                   observe: Observe) -> tuple[dict[str, Any] | None, list[Record]]:
    """The script compiled itself: compare it against runs with Dynamo disabled."""
    launch = request.launch
    eager_launch = LaunchConfig(nproc_per_node=launch.nproc_per_node, torchrun_args=launch.torchrun_args,
                                timeout_s=launch.timeout_s, extra_env={**launch.extra_env, **EAGER_ENV})
    dynamo_off = replace(request, launch=eager_launch)
    compiled_runs, eager_runs = interleaved(
        compiled, lambda: observe(request), lambda: observe(dynamo_off), rounds)
    return _compared(eager_runs, compiled_runs), eager_runs + compiled_runs[1:]


def _through_knob(eager: Record, request: ObserveRequest, plan: CompilePlan, observe: Observe) -> dict[str, Any]:
    """Each variant compiled by the knob and compared with eager runs interleaved with its own (the
    first is `eager`); the first measured variant leads."""
    result: dict[str, Any] = {"compiled_run_id": None, "compile": None, "comparison": None, "modes": []}
    records = []
    config = request.config
    for variant in variants(plan.modes or ["default"], plan.dynamic):
        reason = not_applicable(variant, eager)
        if reason is not None:
            result["modes"].append(mode_row(variant, reason=reason))
            continue
        knobbed = replace(request, config=replace(config, knobs=variant.knobs(config.knobs, plan.backend)))
        eager_runs, compiled_runs = interleaved(
            eager, lambda: observe(request), lambda: observe(knobbed), plan.rounds)
        records += eager_runs[1:] + compiled_runs
        compiled = compiled_runs[0]
        comparison = _compared(eager_runs, compiled_runs)
        _attach(compiled, comparison)
        result["modes"].append(mode_row(variant, compiled=compiled, comparison=comparison))
        if comparison is not None and result["comparison"] is None:
            result.update(compiled_run_id=compiled.run_id, compile=compiled.compile, comparison=comparison)
    result["records"] = records
    return result


def compile_script(request: ObserveRequest, plan: CompilePlan = CompilePlan(), *,
                   save: bool = True) -> tuple[dict[str, Any], list[Record]]:
    """Observe the script `request` names as written, then eager or its compiled variants (see the
    module docstring), as `plan` says. Returns the JSON-ready result (keys in docs/compile.md) and
    the Records, as written first (stored if `save`).
    """
    observe: Observe = functools.partial(observe_with_progress, save=save)  # --no-save: no run folder either
    first = observe(request)
    records = [first]
    result: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "rounds": plan.rounds, "eager_run_id": None,
                              "compiled_run_id": None, "compile": None, "comparison": None, "modes": []}  # fmt: skip
    if first.compile:
        result.update(compiled_run_id=first.run_id, compile=first.compile)
        if first.steps:
            result["comparison"], more = _self_compiled(first, request, plan.rounds, observe)
            _attach(first, result["comparison"])
            records += more
            result["eager_run_id"] = more[0].run_id
        result["modes"] = [mode_row(v, reason=not_applicable(v, first)) for v in variants(plan.modes, plan.dynamic)] \
            if plan.modes else []
    elif first.steps:
        result["eager_run_id"] = first.run_id
        knob = _through_knob(first, request, plan, observe)
        records += knob.pop("records")
        result.update(knob)
    report, comparison = readable(CompileReport.from_dict, result["compile"]), readable(Comparison.from_dict,
                                                                                      result["comparison"])
    result["advice"] = [a.to_dict() for a in advise(report, comparison)]
    if save:
        for record in records:
            record.findings = diagnose_record(record)
        store_records(request.store_path, records)
    return result, records


def _attach(compiled: Record, comparison: dict[str, Any] | None) -> None:
    """Keep the comparison in the compiled run's Record, where the compile rules read it."""
    if comparison is not None and compiled.compile is not None:
        compiled.compile = {**compiled.compile, "comparison": comparison}
