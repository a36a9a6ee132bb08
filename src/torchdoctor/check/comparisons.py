"""Metrics from the samples and figures of both sides: the gated step time from a bench Verdict,
the other figures (samples/s, peak memory, compile time) compared unpaired."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from torchdoctor.bench import SLOWER, TOO_FEW, UNCLEAR, Policy, Verdict, compare_samples
from torchdoctor.check.config import CheckOptions
from torchdoctor.check.decisions import PASS, REGRESSION, UNDECIDED
from torchdoctor.check.gate import GateLook, pass_bound, time_gate
from torchdoctor.check.metric import (COMPILE_TIME, PEAK_MEMORY, SAMPLES_PER_S, STEP_TIME, TIME_PER_SAMPLE, Measure,
                                      Metric, finite)
from torchdoctor.check.result import CheckResult


def _worse_or_better(verdict: Verdict, better: str) -> str:
    if verdict.verdict == TOO_FEW:
        return "too few samples"
    if verdict.verdict == UNCLEAR:
        return UNCLEAR
    higher = verdict.verdict == SLOWER  # B's values are larger
    return "worse" if higher == (better == "lower") else "better"


def metric_from_verdict(measure: Measure, verdict: Verdict, a: Sequence[float], b: Sequence[float],
                        look: GateLook) -> Metric:
    """A metric from a bench Verdict over samples `a` and `b` (its CI at `look.look_confidence`, the
    last look's); gated by `time_gate` as `look` says, as at the last look."""
    confidence = look.look_confidence
    return measure.metric(a=_median(a), b=_median(b), ratio=finite(verdict.ratio), ci_low=finite(verdict.ci_low),
                          ci_high=finite(verdict.ci_high), confidence=confidence,
                          pass_bound=finite(pass_bound(verdict, confidence, look.confidence)),
                          noise_floor=verdict.noise_floor, min_detectable_effect=finite(verdict.min_detectable_effect),
                          verdict=_worse_or_better(verdict, measure.better),
                          gate=time_gate(verdict, look.max_slowdown, look_confidence=confidence,
                                         confidence=look.confidence),
                          threshold=look.max_slowdown, n_a=verdict.n_a, n_b=verdict.n_b)


def compare_figures(measure: Measure, a: Sequence[float | None], b: Sequence[float | None], policy: Policy, *,
                    threshold: float | None = None) -> Metric | None:
    """A metric from per-observation figures (unpaired; the policy's `min_effect` as the noise floor,
    its confidence and seed); None when neither side measured it. With `threshold` it is gated:
    "regression" when worse with the whole CI beyond the threshold (the threshold is then the noise
    floor too), "pass" when not, "undecided" with too few samples."""
    va = [float(v) for v in a if v is not None and v > 0]
    vb = [float(v) for v in b if v is not None and v > 0]
    if not va and not vb:
        return None
    metric = measure.metric(a=_median(va), b=_median(vb), n_a=len(va), n_b=len(vb), threshold=threshold)
    if not va or not vb:
        metric.note = f"measured on side {'B' if vb else 'A'} only"
        return metric
    floor = threshold if threshold is not None else policy.min_effect
    verdict = compare_samples(va, vb, min_effect=min(floor, 0.99), confidence=policy.confidence, seed=policy.seed)
    metric.ratio, metric.ci_low = finite(verdict.ratio), finite(verdict.ci_low)
    metric.ci_high = finite(verdict.ci_high)
    metric.confidence, metric.noise_floor = policy.confidence, verdict.noise_floor
    metric.min_detectable_effect = finite(verdict.min_detectable_effect)
    metric.verdict = _worse_or_better(verdict, measure.better)
    if threshold is not None:
        metric.gate = (UNDECIDED if verdict.verdict == TOO_FEW
                       else REGRESSION if metric.verdict == "worse" else PASS)
    return metric


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None


#: The gate's metric by the figure it compares ("step_s" or "sample_s").
GATE_MEASURES = {"step_s": STEP_TIME, "sample_s": TIME_PER_SAMPLE}


def choose_metric(result: CheckResult, a: dict[str, Any], b: dict[str, Any]) -> str:
    """The figure the gate compares, from the pilots' figures `a` and `b`: the time per sample when
    the batch sizes differ (a bigger batch is not a slower step, and `result` is warned), else the step."""
    if a.get("batch_size") and b.get("batch_size") and a["batch_size"] != b["batch_size"] and a.get("sample_s"):
        result.warnings.append(f"the batch sizes differ (A {a['batch_size']}, B {b['batch_size']}): the gate "
                               "compares the time per sample, not per step")
        return "sample_s"
    return "step_s"


def secondary_metrics(options: CheckOptions, a: list[dict[str, Any]], b: list[dict[str, Any]],
                      gate_metric: str) -> list[Metric]:
    """Samples/s, peak memory (gated), compile time and, when the gate is per sample, the step time,
    from the per-observation figures of both sides (either may be empty)."""
    def values(figures: list[dict[str, Any]], key: str) -> list[Any]:
        return [f.get(key) for f in figures]

    policy = options.policy
    metrics = []
    if gate_metric != "step_s":
        metrics.append(compare_figures(STEP_TIME, values(a, "step_s"), values(b, "step_s"), policy))
    metrics.append(compare_figures(SAMPLES_PER_S, values(a, "samples_per_s"), values(b, "samples_per_s"), policy))
    if options.memory:
        metrics.append(_memory_metric(options, values(a, "peak_bytes"), values(b, "peak_bytes"), a + b))
    metrics.append(compare_figures(COMPILE_TIME, values(a, "compile_s"), values(b, "compile_s"), policy))
    return [m for m in metrics if m is not None]


def _memory_metric(options: CheckOptions, a: list[Any], b: list[Any], figures: list[dict[str, Any]]) -> Metric | None:
    """Peak memory, gated at `max_memory_growth` only when both sides measured it."""
    memory = compare_figures(PEAK_MEMORY, a, b, options.policy, threshold=options.max_memory_growth)
    if memory is not None:
        methods = {f.get("memory_method") for f in figures if f.get("memory_method")}
        memory.note = (memory.note + "; " if memory.note else "") + "measured by " + ", ".join(sorted(methods))
        if memory.gate is not None and (memory.n_a == 0 or memory.n_b == 0):
            memory.gate = None
    return memory
