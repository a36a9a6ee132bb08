"""The dynamic batcher's contract, with a plain Python batch function standing in for a model.

Tests about time run on a virtual clock (tests/serve/virtual_time.py): the batcher gets the loop's
clock, sleeps and deadlines jump instead of waiting, and a model declares how long it takes, so
batch sizes and delays are exact and no outcome depends on the machine's load. How late a real
event loop dispatches is measured by benchmarks/timing_targets.py.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.serve.virtual_time import model_time, run_virtual
from torchdoctor.serve import BatcherConfig, BatchRecord, DynamicBatcher
from torchdoctor.serve.errors import BatchFailedError, QueueFullError, RequestTimeoutError, ServeConfigError


def doubled(items: list[int]) -> list[int]:
    return [2 * item for item in items]


def test_a_batch_goes_when_full_or_when_its_first_request_has_waited_max_delay() -> None:
    records: list[BatchRecord] = []
    config = BatcherConfig(max_batch_size=4, max_delay_ms=10)

    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        async with DynamicBatcher(doubled, config, records.append, clock=loop.time) as batcher:
            trickle = []
            for i in range(6):  # arrivals 15 ms apart, slower than the delay: lonely batches
                trickle.append(asyncio.ensure_future(batcher.submit(i)))
                await asyncio.sleep(0.015)
            burst = [asyncio.ensure_future(batcher.submit(i)) for i in range(6, 16)]  # more than a batch at once
            return await asyncio.gather(*trickle, *burst)

    results = run_virtual(scenario())
    assert results == [2 * i for i in range(16)]
    # Each lonely request waits the full 10 ms, then goes alone; the burst fills two batches at
    # once (no wait) and its remaining two wait 10 ms for company that never comes.
    assert [r.size for r in records] == [1] * 6 + [4, 4, 2]
    assert [r.delay_s for r in records] == pytest.approx([0.010] * 6 + [0.0, 0.0, 0.010], abs=1e-9)
    assert not any(r.failed for r in records)


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


def test_a_model_error_fails_only_the_request_it_came_from_and_says_nothing_of_the_model(caplog) -> None:
    calls: list[list[int]] = []

    def picky(items: list[int]) -> list[int]:
        calls.append(list(items))
        if 13 in items:
            raise ValueError("unlucky secret")
        return doubled(items)

    async def scenario() -> list:
        async with DynamicBatcher(picky, BatcherConfig(max_batch_size=4, max_delay_ms=50)) as b:
            return await asyncio.gather(*(b.submit(i) for i in (1, 13, 2, 3)), return_exceptions=True)

    one, error, two, three = asyncio.run(scenario())
    assert (one, two, three) == (2, 4, 6)  # its batch-mates were run again, alone, and answered
    assert isinstance(error, BatchFailedError) and "unlucky" not in str(error)
    assert calls == [[1, 13, 2, 3], [1], [13], [2], [3]]
    assert "unlucky secret" in caplog.text  # the details are in the server log


def test_timed_out_and_cancelled_requests_are_skipped_and_the_batcher_goes_on() -> None:
    seen: list[list[int]] = []

    def slow(items: list[int]) -> list[int]:
        seen.append(list(items))
        if items == [1]:
            model_time(0.05)  # this batch keeps the worker busy for 50 ms
        return doubled(items)

    async def scenario() -> list:
        loop = asyncio.get_running_loop()
        config = BatcherConfig(max_batch_size=1, max_delay_ms=0, timeout_ms=20)
        async with DynamicBatcher(slow, config, clock=loop.time) as b:
            busy = asyncio.ensure_future(b.submit(1))  # dispatched at once: the worker is busy to 50 ms
            await asyncio.sleep(0.001)
            late = asyncio.ensure_future(b.submit(2))  # times out (at 21 ms) while queued
            gone = asyncio.ensure_future(b.submit(3))
            await asyncio.sleep(0.001)
            gone.cancel()  # the client went away
            outcomes = await asyncio.gather(busy, late, gone, return_exceptions=True)
            await asyncio.sleep(0.08)  # past 50 ms: the worker finished the busy batch
            return list(outcomes) + [await b.submit(4)]

    busy, late, gone, after = run_virtual(scenario())
    assert isinstance(busy, RequestTimeoutError)  # dispatched, but 20 ms < 50 ms: its result is discarded
    assert isinstance(late, RequestTimeoutError) and isinstance(gone, asyncio.CancelledError)
    assert after == 8 and seen == [[1], [4]]  # 2 and 3 never reached the model


def test_nonsensical_limits_are_rejected() -> None:
    with pytest.raises(ServeConfigError, match="--max-batch-size"):
        BatcherConfig(max_batch_size=0)


# On the wall clock: admission trusts the measured 40 ms a batch, which a busy neighbour stretches
# (five admitted requests timed out with another test on the second core).
@pytest.mark.serial
def test_a_request_that_could_not_be_answered_in_time_is_refused_at_once_not_timed_out() -> None:
    def slow(items: list[int]) -> list[int]:
        time.sleep(0.04)  # 40 ms a batch of up to 2: 20 requests need 400 ms
        return doubled(items)

    async def scenario() -> tuple[list, int]:
        config = BatcherConfig(max_batch_size=2, max_delay_ms=0, timeout_ms=200)
        async with DynamicBatcher(slow, config) as b:
            assert 0.03 < await b.warm_up([0, 0]) < 1  # what a batch costs, known before the burst
            burst = await asyncio.gather(*(b.submit(i) for i in range(20)), return_exceptions=True)
            return burst, await b.submit(21)  # the queue is empty again: admitted

    burst, after = asyncio.run(scenario())
    refused = [o for o in burst if isinstance(o, QueueFullError)]
    assert refused and "longer than the 200 ms timeout" in str(refused[0])
    assert not [o for o in burst if isinstance(o, RequestTimeoutError)]
    assert [o for o in burst if not isinstance(o, Exception)] == [2 * i for i in range(len(burst) - len(refused))]
    assert after == 42
