"""Choosing the fastest variant that stayed within tolerance (definitions in `Recommendation`)."""

from __future__ import annotations

import math

from torchdoctor.infer.result import Recommendation, VariantResult

BASELINE = "eager"


def recommend(variants: list[VariantResult], batch_sizes: list[int]) -> Recommendation:
    """The candidate with the best geometric-mean speedup over eager, if it is clearly faster
    (the bench verdict says "faster") at one batch size at least; otherwise eager."""
    candidates = [v for v in variants if _complete(v, batch_sizes)]
    by_batch = {bs: _winner_at(candidates, index) for index, bs in enumerate(batch_sizes)}
    scored = sorted((_geomean_ratio(v), v.name) for v in candidates if _ever_faster(v))
    if not scored or scored[0][0] >= 1:
        reason = "no variant within tolerance was clearly faster than eager"
        return Recommendation(BASELINE, reason, 1.0, by_batch)
    ratio, name = scored[0]
    reason = f"fastest within tolerance: {1 / ratio:.2f}x eager's speed (geometric mean over batch sizes)"
    return Recommendation(name, reason, 1 / ratio, by_batch)


def _complete(variant: VariantResult, batch_sizes: list[int]) -> bool:
    return (
        variant.name != BASELINE
        and variant.status == "ok"
        and [m.batch_size for m in variant.measurements] == list(batch_sizes)
    )


def _ever_faster(variant: VariantResult) -> bool:
    return any(m.vs_eager and m.vs_eager["verdict"] == "faster" for m in variant.measurements)


def _geomean_ratio(variant: VariantResult) -> float:
    ratios = [m.vs_eager["ratio"] for m in variant.measurements if m.vs_eager]
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def _winner_at(candidates: list[VariantResult], index: int) -> str:
    faster = [
        (v.measurements[index].vs_eager["ratio"], v.name)
        for v in candidates
        if v.measurements[index].vs_eager["verdict"] == "faster"
    ]
    return min(faster)[1] if faster else BASELINE
