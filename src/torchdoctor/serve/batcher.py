"""An asyncio dynamic batcher: requests queue up, one worker runs them in batches.

Semantics:
  * a batch is dispatched when it holds `max_batch_size` requests, or when `max_delay_ms` have
    passed since its first request was queued (or since the worker became free, if later);
  * the queue holds at most `max_queue` accepted requests; `submit` beyond that raises
    QueueFullError at once, and the request is not accepted; so it does when the requests ahead
    would take longer than `timeout_ms` to run (queued batches x the recent time of a batch, an
    exponential average seeded by `warm_up`): a request the server cannot answer in time is
    refused at once (503, retry later) instead of accepted and timed out (504) after holding a
    place in the queue; an empty queue always admits (a stale estimate must not refuse forever);
  * one worker thread owns the model and runs one batch at a time (`run_batch(items) -> results`,
    one result per item, in order); if it raises, each request of the batch is run again alone, so
    that only a request the model fails on by itself gets BatchFailedError (its message generic:
    the model's error is logged on the "torchdoctor.serve" logger, never sent to the client), and
    the other batches are unaffected;
  * a request cancelled (client gone) or timed out (`timeout_ms`) before dispatch is skipped;
    after dispatch its result is discarded. Every accepted request ends in exactly one result
    or error; `stop()` fails the ones still queued with BatcherClosedError.
Each dispatched batch is reported to `on_batch` as a BatchRecord.

Time: `clock` (seconds, monotonic; default `time.perf_counter`) stamps requests and batches and
sets the delay deadline. The waits themselves are asyncio's, on the event loop's clock; a test
passes its loop's `time` (e.g. a virtual-time loop's) so that both agree.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from torchdoctor.serve.errors import (
    BatcherClosedError,
    BatchFailedError,
    QueueFullError,
    RequestTimeoutError,
    ServeConfigError,
)

LOG = logging.getLogger("torchdoctor.serve")
#: What a client is told when the model fails on its request (details only in the server log).
MODEL_FAILED = "the model failed on this request (details in the server log)"
#: Weight of the newest batch in the average batch time that admission uses.
BATCH_TIME_WEIGHT = 0.3
#: Admission refuses a request whose expected wait exceeds this share of the timeout.
ADMIT_SHARE = 0.9


@dataclass(frozen=True, kw_only=True)
class BatcherConfig:
    """Batching limits; `timeout_ms` None means a request waits as long as it takes."""

    max_batch_size: int = 32
    max_delay_ms: float = 5.0
    max_queue: int = 1024
    timeout_ms: float | None = 5000.0

    def __post_init__(self) -> None:
        if self.max_batch_size < 1 or self.max_queue < 1:
            raise ServeConfigError("--max-batch-size and --max-queue must be at least 1")
        delay_ok = math.isfinite(self.max_delay_ms) and self.max_delay_ms >= 0
        timeout_ok = self.timeout_ms is None or (math.isfinite(self.timeout_ms) and self.timeout_ms > 0)
        if not delay_ok or not timeout_ok:
            raise ServeConfigError(f"--max-delay-ms must be >= 0 and --timeout-ms > 0 (got {self.max_delay_ms}, "
                                   f"{self.timeout_ms})")


@dataclass(frozen=True)
class BatchRecord:
    """One dispatched batch. `delay_s`: from the later of (first request queued, worker free) to
    dispatch, the wait the batcher added; `run_s`: the model call."""

    size: int
    delay_s: float
    run_s: float
    failed: bool


@dataclass
class _Pending:
    item: Any
    future: asyncio.Future
    queued_s: float


class DynamicBatcher:
    """See the module docstring. Use as ``async with DynamicBatcher(...) as b: await b.submit(x)``."""

    def __init__(
        self,
        run_batch: Callable[[list[Any]], list[Any]],
        config: BatcherConfig,
        on_batch: Callable[[BatchRecord], None] | None = None,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._run_batch, self.config, self._on_batch = run_batch, config, on_batch
        self._clock = clock
        self._queue: collections.deque[_Pending] = collections.deque()
        self._arrived = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchdoctor-model")
        self._worker: asyncio.Task | None = None
        self._batch_s: float | None = None  # average run time of a batch (None until one ran)

    @property
    def queue_depth(self) -> int:
        """Accepted requests not yet dispatched."""
        return len(self._queue)

    async def __aenter__(self) -> DynamicBatcher:
        self._worker = asyncio.get_running_loop().create_task(self._work())
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Stop the worker, fail the requests still queued, release the model thread."""
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        while self._queue:
            _settle(self._queue.popleft().future, error=BatcherClosedError("the server is shutting down"))
        self._executor.shutdown(wait=True)

    async def submit(self, item: Any) -> Any:
        """Queue `item` and return its result (raises a RequestError subclass otherwise)."""
        if len(self._queue) >= self.config.max_queue:
            raise QueueFullError(f"the queue is full ({self.config.max_queue} requests); retry later")
        wait_s = self.expected_wait_s()
        # An empty queue always admits: the estimate may be stale, and only runs refresh it.
        if self._queue and self.config.timeout_ms is not None and wait_s > ADMIT_SHARE * self.config.timeout_ms / 1e3:
            raise QueueFullError(f"the requests queued ahead would take about {wait_s:.1f} s, longer than the "
                                 f"{self.config.timeout_ms:g} ms timeout; retry later")
        future = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(item, future, self._clock()))
        self._arrived.set()
        timeout = None if self.config.timeout_ms is None else self.config.timeout_ms / 1e3
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise RequestTimeoutError(f"no result within {self.config.timeout_ms:g} ms") from None

    def expected_wait_s(self) -> float:
        """How long a request queued now would wait for its result: the batches ahead of it and
        its own, at the recent time of a batch (0 before any batch ran: see `warm_up`)."""
        if self._batch_s is None:
            return 0.0
        batches = len(self._queue) // self.config.max_batch_size + 2  # ahead, running, its own
        return batches * self._batch_s

    def _note_batch_time(self, run_s: float) -> None:
        self._batch_s = run_s if self._batch_s is None else (
            BATCH_TIME_WEIGHT * run_s + (1 - BATCH_TIME_WEIGHT) * self._batch_s)

    async def warm_up(self, items: list[Any]) -> float:
        """Run `items` (a full batch of typical requests) twice before serving: the first call
        warms the model up, the second times a batch, so that admission knows what a batch costs
        before the first burst of requests; returns that time."""
        await self._call(items)
        start_s = self._clock()
        await self._call(items)
        self._batch_s = self._clock() - start_s
        return self._batch_s

    async def _work(self) -> None:
        while True:
            batch, delay_s = await self._collect()
            if batch:
                await self._dispatch(batch, delay_s)

    async def _collect(self) -> tuple[list[_Pending], float]:
        """Wait for a first live request, then gather more until full or the deadline passes."""
        while not self._queue:
            self._arrived.clear()
            await self._arrived.wait()
        free_s = self._clock()
        batch: list[_Pending] = []
        self._take(batch)
        if not batch:
            return [], 0.0
        start_s = max(batch[0].queued_s, free_s)
        deadline_s = start_s + self.config.max_delay_ms / 1e3
        while len(batch) < self.config.max_batch_size:
            remaining_s = deadline_s - self._clock()
            if remaining_s <= 0:
                break
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining_s)
            except asyncio.TimeoutError:
                break
            self._take(batch)
        self._take(batch)
        return batch, self._clock() - start_s

    def _take(self, batch: list[_Pending]) -> None:
        while self._queue and len(batch) < self.config.max_batch_size:
            pending = self._queue.popleft()
            if not pending.future.done():  # cancelled or timed out while queued: skip
                batch.append(pending)

    async def _dispatch(self, batch: list[_Pending], delay_s: float) -> None:
        start_s = self._clock()
        failed = False
        try:
            for pending, result in zip(batch, await self._call([p.item for p in batch])):
                _settle(pending.future, result=result)
        except Exception as exc:  # any exception from the model: find the request(s) it came from
            failed = True
            LOG.warning("the model raised on a batch of %d (%s: %s); running its requests one by one",
                        len(batch), type(exc).__name__, exc)
            await self._one_by_one(batch)
        run_s = self._clock() - start_s
        if not failed:
            self._note_batch_time(run_s)
        if self._on_batch is not None:
            self._on_batch(BatchRecord(len(batch), delay_s, run_s, failed))

    async def _call(self, items: list[Any]) -> list[Any]:
        results = await asyncio.get_running_loop().run_in_executor(self._executor, self._run_batch, items)
        if len(results) != len(items):
            raise RuntimeError(f"the model returned {len(results)} results for {len(items)} requests")
        return results

    async def _one_by_one(self, batch: list[_Pending]) -> None:
        """Each request of a failed batch alone: only those the model fails on by themselves fail."""
        for pending in batch:
            if pending.future.done():  # its client left or timed out meanwhile
                continue
            try:
                (result,) = await self._call([pending.item])
            except Exception:
                LOG.exception("the model failed on a request run alone")
                _settle(pending.future, error=BatchFailedError(MODEL_FAILED))
            else:
                _settle(pending.future, result=result)


def _settle(future: asyncio.Future, *, result: Any = None, error: Exception | None = None) -> None:
    """Complete `future` unless its requester already gave up (cancelled or timed out)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
