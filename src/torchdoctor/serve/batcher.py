"""An asyncio dynamic batcher: requests queue up, one worker runs them in batches.

Semantics:
  * a batch is dispatched when it holds `max_batch_size` requests, or when `max_delay_ms` have
    passed since its first request was queued (or since the worker became free, if later);
  * the queue holds at most `max_queue` accepted requests; `submit` beyond that raises
    QueueFullError at once, and the request is not accepted;
  * one worker thread owns the model and runs one batch at a time (`run_batch(items) -> results`,
    one result per item, in order); if it raises, every request of that batch gets
    BatchFailedError and the other batches are unaffected;
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
        if self.max_delay_ms < 0 or (self.timeout_ms is not None and self.timeout_ms <= 0):
            raise ServeConfigError("--max-delay-ms must be >= 0 and --timeout-ms > 0")


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
        future = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(item, future, self._clock()))
        self._arrived.set()
        timeout = None if self.config.timeout_ms is None else self.config.timeout_ms / 1e3
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise RequestTimeoutError(f"no result within {self.config.timeout_ms:g} ms") from None

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
        loop = asyncio.get_running_loop()
        start_s = self._clock()
        failed = False
        try:
            results = await loop.run_in_executor(self._executor, self._run_batch, [p.item for p in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"the model returned {len(results)} results for {len(batch)} requests")
            for pending, result in zip(batch, results):
                _settle(pending.future, result=result)
        except Exception as exc:  # any exception from the model fails this batch only
            failed = True
            for pending in batch:
                _settle(pending.future, error=BatchFailedError(f"the model raised: {type(exc).__name__}: {exc}"))
        if self._on_batch is not None:
            self._on_batch(BatchRecord(len(batch), delay_s, self._clock() - start_s, failed))


def _settle(future: asyncio.Future, *, result: Any = None, error: Exception | None = None) -> None:
    """Complete `future` unless its requester already gave up (cancelled or timed out)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
