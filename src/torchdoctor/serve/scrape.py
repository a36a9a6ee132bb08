"""Reading the server's Prometheus text back, with prometheus_client's own parser."""

from __future__ import annotations

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
            le = sample.labels.get("le")
            if sample.name.endswith("_bucket") and le not in (None, "+Inf"):
                cumulative[int(float(le))] = sample.value
    counts, previous = {}, 0.0
    for size in sorted(cumulative):
        counts[size] = int(cumulative[size] - previous)
        previous = cumulative[size]
    return counts
