"""Eager vs compiled: two Records of the same script, one run with Dynamo disabled.

- speed: `torchdoctor.bench.compare_samples` on the per-step wall times of the timing windows
  (B = compiled against A = eager; ratio < 1 is faster);
- operators: `torchdoctor.trace.diff_traces` on the profiler traces; operators `removed` in the
  compiled trace are those torch.compile fused away, `same`/`faster`/`slower` those that remain;
- payoff: steps after which the saved time repays the compile time,
  compile_time_s / (eager step_s - compiled step_s); None when compiled is not faster.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.record import Record

SCHEMA_VERSION = 1
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


def compare_eager_compiled(eager: Record, compiled: Record, *, top: int = 10) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (keys in docs/compile.md)."""
    from torchdoctor.bench import compare_samples

    verdict = compare_samples(_step_times(eager), _step_times(compiled))
    compile_time = (compiled.compile or {}).get("compile_time_s")
    eager_step, compiled_step = eager.summary.step_s, compiled.summary.step_s
    return {
        "schema_version": SCHEMA_VERSION,
        "eager_run_id": eager.run_id,
        "compiled_run_id": compiled.run_id,
        "eager_step_s": eager_step,
        "compiled_step_s": compiled_step,
        "verdict": verdict.to_dict(),
        "compile_time_s": compile_time,
        "payoff_steps": payoff_steps(compile_time, eager_step, compiled_step),
        "operators": _trace_diff(eager, compiled, top),
    }
