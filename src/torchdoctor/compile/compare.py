"""Eager vs compiled: Records of the same script, eager runs (Dynamo disabled, or no compile
applied) and compiled runs, measured in alternating rounds (workflow/compile.py).

- speed: `torchdoctor.bench.compare_runs` on the runs' per-step wall times (B = compiled against
  A = eager; ratio < 1 is faster), the statistic tune's confirmation uses: one run against one run
  took its interval from the steps inside each run and ignored how runs differ, and on a 2-core
  VM two plain runs of the same script measured 5.1 and 8.0 ms a step; a verdict that the runs of
  one side do not corroborate (`decided` false) is "no clear difference";
- operators: `torchdoctor.trace.diff_traces` on the profiler traces; operators `removed` in the
  compiled trace are those torch.compile fused away, `same`/`faster`/`slower` those that remain;
- payoff: steps after which the saved time repays the compile time,
  compile_time_s / (eager step_s - compiled step_s); None unless the verdict is "faster".
"""

from __future__ import annotations

from typing import Any, Sequence

from torchdoctor.record import Record

#: 2: several runs a side (`rounds`, `eager_run_ids`, `compiled_run_ids`); `verdict` is
#: RunsVerdict.to_dict() (Verdict's keys and the runs' means, agreement and `decided`).
SCHEMA_VERSION = 2
#: Environment variable that turns every torch.compile into a no-op (Dynamo's own switch).
EAGER_ENV = {"TORCHDYNAMO_DISABLE": "1"}


def _step_times(record: Record) -> list[float]:
    return [s.wall_s for s in record.steps if s.wall_s > 0]


def _trace_diff(eager: Record, compiled: Record, top: int) -> dict[str, Any] | None:
    a, b = eager.artifacts.get("traces", []), compiled.artifacts.get("traces", [])
    if not a or not b:
        return None
    from torchdoctor.trace import diff_traces

    diff = diff_traces(a[0], b[0])
    ops = list(diff.ops)
    return {
        "fused_away": [o for o in ops if o.get("status") == "removed"][:top],
        "added": [o for o in ops if o.get("status") == "added"][:top],
        "remaining": [o for o in ops if o.get("status") in ("same", "faster", "slower")][:top],
        "diff": diff.to_dict(),
    }


def payoff_steps(compile_time_s: float | None, eager_step_s: float | None,
                 compiled_step_s: float | None) -> float | None:
    """Steps needed for the per-step saving to repay the compile time (None: never)."""
    if not compile_time_s or not eager_step_s or not compiled_step_s or compiled_step_s >= eager_step_s:
        return None
    return compile_time_s / (eager_step_s - compiled_step_s)


def compare_eager_compiled(eager: Sequence[Record], compiled: Sequence[Record], *, top: int = 10) -> dict[str, Any]:
    """The comparison of the eager runs with the compiled runs as a JSON-ready dict (keys in
    docs/compile.md); the compile time and the operators come from the first compiled run (and the
    first eager one)."""
    from torchdoctor.bench import FASTER, UNCLEAR, compare_runs, geometric_median

    runs = compare_runs([_step_times(r) for r in eager], [_step_times(r) for r in compiled])
    verdict = runs.to_dict()
    if not runs.decided:
        verdict["verdict"] = UNCLEAR  # the runs of one side disagree: no verdict rests on one of them
    compile_time = (compiled[0].compile or {}).get("compile_time_s")
    # the verdict's own statistic, so that compiled_step_s / eager_step_s is its ratio and the payoff
    # rests on the figures it judged (a run's median step misses the bursty waits its mean counts)
    eager_step, compiled_step = geometric_median(runs.a_means), geometric_median(runs.b_means)
    return {
        "schema_version": SCHEMA_VERSION,
        "eager_run_id": eager[0].run_id,
        "compiled_run_id": compiled[0].run_id,
        "eager_run_ids": [r.run_id for r in eager],
        "compiled_run_ids": [r.run_id for r in compiled],
        "rounds": min(len(eager), len(compiled)),
        "eager_step_s": eager_step,
        "compiled_step_s": compiled_step,
        "verdict": verdict,
        "compile_time_s": compile_time,
        # a saving the runs do not show repays nothing: no payoff without a "faster" verdict
        "payoff_steps": payoff_steps(compile_time, eager_step, compiled_step) if verdict["verdict"] == FASTER else None,
        "operators": _trace_diff(eager[0], compiled[0], top),
    }
