"""Measuring every live variant at one batch size: accuracy, memory, latency, verdict vs eager.

Memory: `peak_device_memory_bytes` is torch.cuda.max_memory_allocated over the variant's
warm-up calls (CUDA only); `rss_bytes` is the process's resident set after them (psutil), which
on CPU only bounds the variant's footprint from above, since all variants share the process.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psutil

from torchdoctor.infer.accuracy import compare_outputs
from torchdoctor.infer.config import InferConfig
from torchdoctor.infer.live import Live, failure_reason
from torchdoctor.infer.result import Accuracy, BatchMeasurement
from torchdoctor.infer.timing import device_sync, interleaved_latencies
from torchdoctor.infer.variants.base import first_tensor


def measure_variants(live: Live, batch: tuple[Any, ...], config: InferConfig) -> None:
    """Append a BatchMeasurement to each live variant's result; drop those that fail here."""
    sync = device_sync(config.device)
    reference = first_tensor(live["eager"][1].run(*batch))
    checked: dict[str, tuple[Accuracy, int | None]] = {}
    for name, (result, prepared) in list(live.items()):
        try:
            checked[name] = _check_and_warm(prepared.run, batch, reference, config)
        except Exception as exc:  # any exception: this variant failed at this batch size
            result.fail("failed", f"at batch size {len(batch[0])}: {failure_reason(exc)}")
            del live[name]
    calls = {name: _bound(live[name][1].run, batch) for name in checked}
    samples = interleaved_latencies(calls, iters=config.iters, rounds=config.rounds, sync=sync)
    rss = psutil.Process().memory_info().rss
    for name, (accuracy, peak) in checked.items():
        verdict = None if name == "eager" else _verdict(samples["eager"], samples[name])
        live[name][0].measurements.append(_summary(len(batch[0]), samples[name], rss, peak, accuracy, verdict))


def _check_and_warm(
    run: Any, batch: tuple[Any, ...], reference: Any, config: InferConfig
) -> tuple[Accuracy, int | None]:
    import torch

    cuda = config.device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    accuracy = compare_outputs(reference, first_tensor(run(*batch)))
    for _ in range(config.warmup):
        run(*batch)
    device_sync(config.device)()
    return accuracy, (torch.cuda.max_memory_allocated() if cuda else None)


def _bound(run: Any, batch: tuple[Any, ...]) -> Any:
    return lambda: run(*batch)


def _verdict(eager: list[float], variant: list[float]) -> dict[str, Any]:
    from torchdoctor.bench import compare_samples

    return compare_samples(eager, variant).to_dict()


def _summary(
    batch_size: int,
    samples: list[float],
    rss: int,
    peak: int | None,
    accuracy: Accuracy,
    verdict: dict[str, Any] | None,
) -> BatchMeasurement:
    p50, p90, p99 = (float(x) for x in np.percentile(samples, [50, 90, 99]))
    return BatchMeasurement(
        batch_size=batch_size,
        n_samples=len(samples),
        latency_s_p50=p50,
        latency_s_p90=p90,
        latency_s_p99=p99,
        throughput_samples_per_s=batch_size / p50,
        rss_bytes=rss,
        peak_device_memory_bytes=peak,
        accuracy=accuracy,
        vs_eager=verdict,
    )
