"""Prometheus metrics of one server, on a registry of its own (names below are public)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from torchdoctor.serve.batcher import BatchRecord

#: Latency buckets in seconds, from 0.5 ms to 10 s.
LATENCY_BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


@dataclass
class ServerMetrics:
    """`torchdoctor_requests_total{status}` (HTTP status), `torchdoctor_batch_size` (one bucket per
    size, so the distribution is exact), `torchdoctor_queue_depth`, `torchdoctor_request_latency_seconds`
    (request arrival to response, /predict only) and `torchdoctor_batch_delay_seconds`."""

    registry: CollectorRegistry
    requests: Counter
    batch_size: Histogram
    queue_depth: Gauge
    latency: Histogram
    batch_delay: Histogram

    @classmethod
    def create(cls, max_batch_size: int) -> ServerMetrics:
        registry = CollectorRegistry()
        return cls(
            registry=registry,
            requests=Counter("torchdoctor_requests", "Requests to /predict by HTTP status", ["status"],
                             registry=registry),
            batch_size=Histogram("torchdoctor_batch_size", "Requests per dispatched batch",
                                 buckets=tuple(range(1, max_batch_size + 1)), registry=registry),
            queue_depth=Gauge("torchdoctor_queue_depth", "Accepted requests waiting for a batch",
                              registry=registry),
            latency=Histogram("torchdoctor_request_latency_seconds", "Time from request to response",
                              buckets=LATENCY_BUCKETS_S, registry=registry),
            batch_delay=Histogram("torchdoctor_batch_delay_seconds", "Wait the batcher added to a batch",
                                  buckets=LATENCY_BUCKETS_S, registry=registry),
        )

    def observe_batch(self, record: BatchRecord) -> None:
        self.batch_size.observe(record.size)
        self.batch_delay.observe(record.delay_s)
