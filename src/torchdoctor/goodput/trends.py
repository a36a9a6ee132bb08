"""What changed over a whole run, each with its evidence, its fix and the run time at stake:
memory that grows with the step count, periodic stalls (checkpoints, evaluation), step time that
drifts, a slow epoch, operators that changed between the first and the last profiler window,
torch.compile compiling again mid-run."""

from __future__ import annotations

import re
import statistics
from typing import Sequence

from torchdoctor.goodput.section import Part, ProfileWindow, Trend
from torchdoctor.goodput.stream import RunStream

GROWTH_MIN_BYTES = 32 * 2**20  # less growth than this over the run is not reported
DRIFT = 1.15  # the last tenth's median step this many times the first tenth's is a drift
OP_CHANGE = 0.10  # an operator's share of a profiler window that moved this much (10 points) changed
_TOP_OPS = 5  # the operators compared: the largest of each window
_CHECKPOINT = re.compile(r"save|checkpoint|ckpt|serializ", re.IGNORECASE)
_EVALUATION = re.compile(r"eval|valid|test|infer", re.IGNORECASE)


def memory_bytes(reading: tuple[int, float, int | None, int | None]) -> float | None:
    """The CUDA allocator's allocated bytes where CUDA was in use, else the process's RSS."""
    value = reading[3] if reading[3] is not None else reading[2]
    return float(value) if value is not None else None


def _fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope of y over x, and r² of the line."""
    slope, intercept = statistics.linear_regression(x, y)
    mean = statistics.fmean(y)
    total = sum((v - mean) ** 2 for v in y)
    residual = sum((v - (slope * u + intercept)) ** 2 for u, v in zip(x, y))
    return slope, 1 - residual / total if total > 0 else 0.0


def memory_growth(run: RunStream) -> Trend | None:
    """Memory rising with the step count, steadily (a line through the readings, r² >= 0.8)."""
    readings = [(m[0], memory_bytes(m)) for m in run.memory if m[0] > run.first_step + 1]
    points = [(float(step), value) for step, value in readings if value is not None]
    if len(points) < 5 or points[-1][0] - points[0][0] < 20:
        return None
    steps, values = zip(*points)
    slope, r2 = _fit(steps, values)
    grown = slope * (steps[-1] - steps[0])
    if grown < GROWTH_MIN_BYTES or r2 < 0.8:
        return None
    what = "CUDA allocated memory" if run.memory[-1][3] is not None else "the process's RSS"
    return Trend("memory_growth", f"memory grows by {slope / 2**20:.2f} MiB a step",
                 f"{what} from {values[0] / 2**20:.0f} MiB at step {steps[0]:.0f} to "
                 f"{values[-1] / 2**20:.0f} MiB at step {steps[-1]:.0f} (a line fits it, r² {r2:.2f})",
                 "something keeps each step's tensors alive: a list of losses or outputs kept without "
                 ".item() or .detach(), a cache or history that grows; a longer run runs out of memory",
                 figures={"growth_bytes_per_step": slope, "first_bytes": values[0], "last_bytes": values[-1],
                          "first_step": steps[0], "last_step": steps[-1], "line_fit_r2": r2})


def step_drift(index: Sequence[int], duration: Sequence[float], median: float | None) -> Trend | None:
    """Steady steps getting slower as the run goes on (the last tenth against the first)."""
    steady = [d for d in duration if median is not None and d < 2 * median]
    if len(steady) < 100:
        return None
    tenth = len(steady) // 10
    first, last = statistics.median(steady[:tenth]), statistics.median(steady[-tenth:])
    if last < DRIFT * first:
        return None
    upside = sum(max(0.0, d - first) for d in steady)
    return Trend("step_drift", f"steps slow down over the run: {first * 1e3:.2f} ms to {last * 1e3:.2f} ms",
                 f"median of the first tenth of the steady steps {first * 1e3:.2f} ms, of the last "
                 f"{last * 1e3:.2f} ms", "a growing Python structure walked each step, memory "
                 "fragmentation, or thermal throttling; compare a profile of an early and a late step",
                 upside, {"first_tenth_step_s": first, "last_tenth_step_s": last, "steady_steps": len(steady)})


def periodic_stall(part: Part, wall_s: float) -> Trend | None:
    """A periodic group of slow steps named by its cause: checkpoints and evaluation get their fix."""
    if part.kind != "slow" or part.cause is None or not part.period_steps or not part.steps:
        return None
    each = part.seconds / part.steps
    share = part.seconds / wall_s if wall_s else 0.0
    evidence = (f"every {part.period_steps} steps, {each:.3f} s in {part.cause}: {part.seconds:.1f} s, "
                f"{100 * share:.1f}% of the run ({part.steps} times)")
    figures = {"period_steps": float(part.period_steps), "each_s": each, "total_s": part.seconds,
               "times": float(part.steps), "run_share_fraction": share}
    function = part.cause.split(" (")[0]  # the function's name, not its file's
    if _CHECKPOINT.search(function):
        return Trend("checkpoint", f"checkpoints take {100 * share:.1f}% of the run", evidence,
                     "save less often, from rank 0 only, or asynchronously "
                     "(torch.distributed.checkpoint.async_save): half as often saves the half shown",
                     part.seconds / 2, figures)
    if _EVALUATION.search(function):
        return Trend("evaluation", f"evaluation takes {100 * share:.1f}% of the run", evidence,
                     "evaluate less often or on a subset, under torch.no_grad() (or inference_mode) "
                     "with model.eval(); half as often saves the half shown", part.seconds / 2, figures)
    return Trend("periodic", f"a periodic stall takes {100 * share:.1f}% of the run", evidence,
                 f"look at what {part.cause} does every {part.period_steps} steps", part.seconds, figures)


def profile_change(windows: Sequence[ProfileWindow]) -> Trend | None:
    """The largest operators of the last profiler window against the first's (on the same clock):
    an operator whose share of the window's self time moved by OP_CHANGE or more."""
    if len(windows) < 2 or windows[0].clock != windows[-1].clock:
        return None
    first, last = windows[0], windows[-1]
    before = {op.name: op.share for op in first.ops}
    after = {op.name: op.share for op in last.ops}
    names = {op.name for op in [*first.ops[:_TOP_OPS], *last.ops[:_TOP_OPS]]}
    moves = sorted(((after.get(n, 0.0) - before.get(n, 0.0), n) for n in names), key=lambda m: -abs(m[0]))
    if not moves or abs(moves[0][0]) < OP_CHANGE:
        return None
    change, name = moves[0]
    words = [f"{n} {100 * before.get(n, 0.0):.0f}% -> {100 * after.get(n, 0.0):.0f}%"
             for c, n in moves[:3] if abs(c) >= OP_CHANGE / 2]
    per_step = (first.total_s / first.steps, last.total_s / last.steps)
    return Trend("profile_change", f"the operators changed late in the run: {name} "
                 f"{100 * before.get(name, 0.0):.0f}% -> {100 * after.get(name, 0.0):.0f}%",
                 f"share of the profiled {first.clock} self time, the window at {first.t_s:.0f} s against the "
                 f"one at {last.t_s:.0f} s: {', '.join(words)}; {per_step[0] * 1e3:.2f} ms -> "
                 f"{per_step[1] * 1e3:.2f} ms of operator time a step",
                 "the steps do other work late in the run: inputs that grew, a new code path (a "
                 "curriculum, a schedule, a recompile); diagnose the late part of the run",
                 figures={"share_change_fraction": change, "first_share_fraction": before.get(name, 0.0),
                          "last_share_fraction": after.get(name, 0.0), "first_window_t_s": first.t_s,
                          "last_window_t_s": last.t_s, "first_op_s_per_step": per_step[0],
                          "last_op_s_per_step": per_step[1]})


def _recompile_steps(run: RunStream, duration_of: dict[int, float]) -> list[tuple[int, float, int]]:
    """(step, its time, new graphs) of each rise of torch.compile's graph count after the first
    lean step: the slowest step between the reading before the rise and the rise's."""
    lean = run.mark("lean_start")
    if lean is None:
        return []
    after = int(lean["step"]) + 1  # the hooks coming off may recompile the first lean step
    found = []
    for (before, _, graphs_before), (steps, _, graphs) in zip(run.compiled, run.compiled[1:]):
        span = [i for i in range(before, steps + 1) if i in duration_of]
        if graphs > graphs_before and before >= after and span:
            step = max(span, key=lambda i: duration_of[i])
            found.append((step, duration_of[step], graphs - graphs_before))
    return found


def recompiles(run: RunStream, index: Sequence[int], duration: Sequence[float], median: float | None,
               wall_s: float) -> Trend | None:
    """torch.compile compiling again after warm-up (torch._dynamo's graph count rose mid-run),
    each at the step it slowed, with the time those steps took beyond the median."""
    found = _recompile_steps(run, dict(zip(index, duration)))
    if not found or median is None:
        return None
    extra = sum(max(0.0, d - median) for _, d, _ in found)
    step, first_s, _ = found[0]
    steps = ", ".join(f"step {i} ({d:.2f} s)" for i, d, _ in found[:5])
    return Trend("recompile", f"torch.compile compiled again after warm-up ({len(found)}x), "
                 f"first at step {step}",
                 f"{sum(n for _, _, n in found)} new graphs mid-run: {steps}; the median step "
                 f"{median * 1e3:.2f} ms", "a shape, dtype or Python value the compiled code was "
                 "specialised on changed: TORCH_LOGS=recompiles names the guard that failed; mark the "
                 "varying dimension dynamic or pad the inputs to a few sizes", extra,
                 {"recompiles": float(len(found)), "first_step": float(step), "first_s": first_s,
                  "total_s": extra, "run_share_fraction": extra / wall_s if wall_s else 0.0})


def find_trends(run: RunStream, index: Sequence[int], duration: Sequence[float], parts: Sequence[Part],
                median: float | None, wall_s: float) -> list[Trend]:
    """Every trend the run shows, the largest upside first."""
    found = [memory_growth(run), step_drift(index, duration, median), profile_change(run.profiles),
             recompiles(run, index, duration, median, wall_s),
             *(periodic_stall(p, wall_s) for p in parts)]
    for part in parts:
        if part.kind == "slow_epoch" and part.seconds > 0.01 * wall_s:
            found.append(Trend("slow_epoch", f"a slow epoch costs {part.seconds:.1f} s", part.label,
                               "a first epoch reading cold storage or filling a cache: cache the dataset "
                               "or warm it before timing; later epochs show the steady cost", part.seconds,
                               {"extra_s": part.seconds, "run_share_fraction": part.seconds / wall_s}))
    return sorted((t for t in found if t is not None), key=lambda t: -(t.upside_s or 0.0))
