"""The dynamic batcher's contract, with a plain Python batch function standing in for a model."""

from __future__ import annotations

import asyncio
import time

import pytest

from torchdoctor.serve import BatcherConfig, BatchRecord, DynamicBatcher
from torchdoctor.serve.errors import BatchFailedError, QueueFullError, RequestTimeoutError, ServeConfigError


def doubled(items: list[int]) -> list[int]:
    return [2 * item for item in items]


async def _sleep_overshoot_s(requested_s: float = 0.002, times: int = 20) -> float:
    """The event loop's scheduling jitter here: the worst lateness of a short asyncio.sleep."""
    worst = 0.0
    for _ in range(times):
        start = time.perf_counter()
        await asyncio.sleep(requested_s)
        worst = max(worst, time.perf_counter() - start - requested_s)
    return worst


def test_batches_never_exceed_the_size_or_the_delay_bound_beyond_jitter() -> None:
    records: list[BatchRecord] = []
    config = BatcherConfig(max_batch_size=4, max_delay_ms=10)

    async def scenario() -> tuple[list[int], float]:
        jitter_s = await _sleep_overshoot_s()
        async with DynamicBatcher(doubled, config, records.append) as batcher:
            burst = [batcher.submit(i) for i in range(10)]  # more than a batch at once
            trickle = []
            for i in range(10, 16):  # arrivals slower than the delay: lonely batches
                trickle.append(asyncio.ensure_future(batcher.submit(i)))
                await asyncio.sleep(0.015)
            return await asyncio.gather(*burst, *trickle), jitter_s

    results, jitter_s = asyncio.run(scenario())
    assert results == [2 * i for i in range(16)]
    assert sum(r.size for r in records) == 16
    assert max(r.size for r in records) == 4
    assert max(r.delay_s for r in records) <= 0.010 + jitter_s + 0.005  # 5 ms: one more loop turn
    assert any(r.size == 1 and r.delay_s >= 0.009 for r in records)  # lonely requests did wait


def test_a_full_queue_rejects_with_the_documented_error_and_loses_no_accepted_request() -> None:
    def slow(items: list[int]) -> list[int]:
        time.sleep(0.05)
        return doubled(items)

    async def scenario() -> tuple[list, int]:
        async with DynamicBatcher(slow, BatcherConfig(max_batch_size=2, max_delay_ms=0, max_queue=3)) as b:
            tasks = [asyncio.ensure_future(b.submit(i)) for i in range(8)]
            return await asyncio.gather(*tasks, return_exceptions=True), b.queue_depth

    outcomes, depth = asyncio.run(scenario())
    rejected = [o for o in outcomes if isinstance(o, QueueFullError)]
    answered = [(i, o) for i, o in enumerate(outcomes) if not isinstance(o, Exception)]
    assert len(rejected) == 5 and "the queue is full (3 requests)" in str(rejected[0])
    assert answered == [(i, 2 * i) for i in range(3)] and depth == 0


def test_a_model_error_fails_only_the_batch_it_happened_in() -> None:
    def picky(items: list[int]) -> list[int]:
        if 13 in items:
            raise ValueError("unlucky")
        return doubled(items)

    async def scenario() -> list:
        async with DynamicBatcher(picky, BatcherConfig(max_batch_size=2, max_delay_ms=0)) as b:
            first = await asyncio.gather(b.submit(13), return_exceptions=True)
            return first + [await b.submit(1), await b.submit(2)]

    error, one, two = asyncio.run(scenario())
    assert isinstance(error, BatchFailedError) and "ValueError: unlucky" in str(error)
    assert (one, two) == (2, 4)


def test_timed_out_and_cancelled_requests_are_skipped_and_the_batcher_goes_on() -> None:
    seen: list[list[int]] = []

    def slow(items: list[int]) -> list[int]:
        seen.append(list(items))
        time.sleep(0.05 if items == [1] else 0)
        return doubled(items)

    async def scenario() -> list:
        config = BatcherConfig(max_batch_size=1, max_delay_ms=0, timeout_ms=20)
        async with DynamicBatcher(slow, config) as b:
            busy = asyncio.ensure_future(b.submit(1))  # occupies the worker for 50 ms
            await asyncio.sleep(0.001)
            late = asyncio.ensure_future(b.submit(2))  # times out while queued
            gone = asyncio.ensure_future(b.submit(3))
            await asyncio.sleep(0.001)
            gone.cancel()  # the client went away
            outcomes = await asyncio.gather(busy, late, gone, return_exceptions=True)
            await asyncio.sleep(0.08)  # the worker finishes the busy batch
            return list(outcomes) + [await b.submit(4)]

    busy, late, gone, after = asyncio.run(scenario())
    assert isinstance(late, RequestTimeoutError) and isinstance(gone, asyncio.CancelledError)
    assert isinstance(busy, RequestTimeoutError) or busy == 2
    assert after == 8 and [2] not in seen and [3] not in seen


def test_nonsensical_limits_are_rejected() -> None:
    with pytest.raises(ServeConfigError, match="--max-batch-size"):
        BatcherConfig(max_batch_size=0)
