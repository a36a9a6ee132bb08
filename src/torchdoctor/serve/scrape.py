"""Reading the server's Prometheus text back, with prometheus_client's own parser."""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families


def batch_size_counts(metrics_text: str) -> dict[int, int]:
    """Batches run per batch size, from the cumulative `torchdoctor_batch_size` buckets.

    The histogram has one bucket per integer size, so bucket(le=k) - bucket(le=k-1) is exactly
    the number of batches of size k.
    """
    cumulative: dict[int, float] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "torchdoctor_batch_size":
            continue
        for sample in family.samples:
            size = _bucket_size(sample.labels.get("le"))
            if sample.name.endswith("_bucket") and size is not None and math.isfinite(sample.value):
                cumulative[size] = sample.value
    counts, previous = {}, 0.0
    for size in sorted(cumulative):
        counts[size] = int(cumulative[size] - previous)
        previous = cumulative[size]
    return counts


def _bucket_size(le: str | None) -> int | None:
    """The batch size a bucket's upper bound names; None for +Inf and for what no batch size is
    (a fraction, a negative or non-finite bound, one beyond any batch: a server not ours)."""
    try:
        bound = float(le) if le is not None else math.nan
    except ValueError:
        return None
    if not (math.isfinite(bound) and 0 <= bound <= 2**31 and bound == int(bound)):
        return None
    return int(bound)
