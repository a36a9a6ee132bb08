"""The value `torchdoctor infer` produces: one result per variant and batch size.

JSON contract (docs/inference.md): keys are only added within a schema version; renaming or
removing a key, or changing its meaning, bumps :data:`SCHEMA_VERSION`. Times are seconds; ratios
and verdicts are of the variant (B) against eager (A), from :func:`torchdoctor.bench.compare_samples`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import orjson

SCHEMA_VERSION = 1

#: Variant status: measured and within tolerance / could not be prepared or run / out of tolerance.
STATUSES = ("ok", "failed", "diverged")


@dataclass(slots=True)
class Accuracy:
    """Output of a variant against eager on the same batch.

    `max_rel_error` is max|out - ref| / max|ref| (relative to the largest reference magnitude, so
    near-zero logits do not blow it up); `top1_agreement` is the fraction of rows whose argmax
    matches, for 2-D (batch, classes) outputs only.
    """

    max_abs_error: float
    max_rel_error: float
    top1_agreement: float | None = None


@dataclass(slots=True)
class BatchMeasurement:
    """One variant at one batch size. Latencies are per call (one batch), host wall clock."""

    batch_size: int
    n_samples: int
    latency_s_p50: float
    latency_s_p90: float
    latency_s_p99: float
    throughput_samples_per_s: float  # batch_size / latency_s_p50
    rss_bytes: int  # process resident set after the measurement (psutil), coarse on CPU
    peak_device_memory_bytes: int | None  # torch.cuda.max_memory_allocated, CUDA only
    accuracy: Accuracy | None
    vs_eager: dict[str, Any] | None = None  # Verdict.to_dict(); None for eager itself


@dataclass(slots=True)
class VariantResult:
    """A rung of the ladder. `prepare_s` covers export/compile and the first call."""

    name: str
    family: str
    description: str
    status: str = "ok"
    reason: str = ""
    prepare_s: float | None = None
    size_bytes: int | None = None
    artifact_path: str | None = None
    measurements: list[BatchMeasurement] = field(default_factory=list)

    def fail(self, status: str, reason: str) -> None:
        self.status, self.reason = status, reason


@dataclass(slots=True)
class Recommendation:
    """The fastest variant within tolerance. `speedup_vs_eager` is the geometric mean over batch
    sizes of median(eager) / median(variant); `by_batch_size` names the winner at each size."""

    variant: str
    reason: str
    speedup_vs_eager: float | None
    by_batch_size: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class InferResult:
    """Everything one `torchdoctor infer` run measured."""

    model: str
    device: str
    batch_sizes: list[int]
    tolerance: dict[str, float]
    env: dict[str, Any]
    variants: list[VariantResult]
    recommendation: Recommendation | None = None
    schema_version: int = SCHEMA_VERSION

    def variant(self, name: str) -> VariantResult:
        return next(v for v in self.variants if v.name == name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
