"""A load generator for a torchdoctor server on loopback, open- or closed-loop, bounded.

Open loop: request i is sent at start + i / rate_qps whether or not earlier ones returned (arrivals
do not slow down when the server does, as with real users). Closed loop: `clients` clients each
send their next request when the previous one returned. Both stop issuing at `max_requests` or
`duration_s`, whichever comes first, then wait for the outstanding requests (each bounded by
`request_timeout_s`). Latency is from send to full response, per request.
The batch-size distribution is the change in the server's `torchdoctor_batch_size` histogram over
the run, so it counts every batch the server ran meanwhile (run one load at a time).
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import aiohttp
import numpy as np
import orjson

from torchdoctor.serve.errors import ServeConfigError
from torchdoctor.serve.scrape import batch_size_counts

SCHEMA_VERSION = 1
#: The longest response read (a /predict answer, /health, /metrics): a server that sends more is
#: counted as failing that request, not read whole.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class LoadConfig:
    """One load run against the server at `url` (loopback only); `mode` "open" or "closed"."""

    url: str
    mode: str = "closed"
    rate_qps: float = 100.0
    clients: int = 8
    max_requests: int = 1000
    duration_s: float = 10.0
    request_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        parsed = urlparse(self.url)
        try:
            _ = parsed.port  # urllib checks the port when it is read
        except ValueError:
            raise ServeConfigError(f"{self.url!r} is not a URL with a port in 0..65535") from None
        host = parsed.hostname or ""
        if not _is_loopback(host):
            raise ServeConfigError(f"load targets loopback only (127.0.0.1, ::1, localhost); got {host!r}")
        if self.mode not in ("open", "closed"):
            raise ServeConfigError(f"mode must be open or closed, got {self.mode!r}")
        numbers = (self.rate_qps, self.duration_s, self.request_timeout_s)
        if not all(math.isfinite(n) and n > 0 for n in numbers) or self.clients < 1 or self.max_requests < 1:
            raise ServeConfigError(f"rate, clients, requests and duration must be positive (got rate {self.rate_qps}, "
                                   f"clients {self.clients}, requests {self.max_requests}, duration {self.duration_s})")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(slots=True)
class LoadResult:
    """What one load run measured. `errors` counts failed requests by HTTP status or error name."""

    url: str
    mode: str
    sent: int
    ok: int
    errors: dict[str, int]
    duration_s: float
    achieved_qps: float  # successful responses per second of the run
    latency_s_p50: float | None
    latency_s_p99: float | None
    batch_sizes: dict[int, int] = field(default_factory=dict)  # batch size -> batches run
    mean_batch_size: float | None = None
    batch_sizes_note: str | None = None  # why `batch_sizes` is empty when it could not be read
    schema_version: int = SCHEMA_VERSION


@dataclass
class _Tally:
    latencies_s: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    sent: int = 0

    def error(self, key: str) -> None:
        self.errors[key] = self.errors.get(key, 0) + 1


async def run_load(config: LoadConfig) -> LoadResult:
    """Drive the server at `config.url` as the module docstring says and summarise the run."""
    timeout = aiohttp.ClientTimeout(total=config.request_timeout_s)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(config.url, timeout=timeout, connector=connector) as session:
        try:
            body = (await _get_json(session, "/health"))["example"]
            before = batch_size_counts(await _get_text(session, "/metrics"))
        except (aiohttp.ClientError, asyncio.TimeoutError, KeyError, TypeError, ValueError) as exc:
            raise ServeConfigError(f"no torchdoctor server answers at {config.url} ({_why(exc)}); start one with "
                                   "`torchdoctor serve`") from None
        tally = _Tally()
        start = time.perf_counter()
        driver = _open_loop if config.mode == "open" else _closed_loop
        await driver(session, body, config, tally, start + config.duration_s)
        duration_s = time.perf_counter() - start
        try:
            after = batch_size_counts(await _get_text(session, "/metrics"))
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:  # the server died meanwhile
            return _summarise(config, tally, duration_s, {}, f"not read: /metrics failed after the run ({_why(exc)})")
    return _summarise(config, tally, duration_s, {k: after[k] - before.get(k, 0) for k in after})


def _why(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect: {exc.os_error.strerror or exc.os_error}"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"HTTP {exc.status}"
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"


async def _get_json(session: aiohttp.ClientSession, path: str) -> Any:
    return orjson.loads(await _get_text(session, path))


async def _get_text(session: aiohttp.ClientSession, path: str) -> str:
    async with session.get(path) as response:
        response.raise_for_status()
        return (await _read_capped(response)).decode("utf-8", "replace")


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    """The response body, at most MAX_RESPONSE_BYTES of it (ValueError past that)."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(1 << 16):
        body += chunk
        if len(body) > MAX_RESPONSE_BYTES:
            raise ValueError(f"a response longer than {MAX_RESPONSE_BYTES:,} bytes")
    return bytes(body)


async def _one(session: aiohttp.ClientSession, body: Any, tally: _Tally) -> None:
    tally.sent += 1
    start = time.perf_counter()
    try:
        async with session.post("/predict", json=body) as response:
            await _read_capped(response)
            if response.status == 200:
                tally.latencies_s.append(time.perf_counter() - start)
            else:
                tally.error(str(response.status))
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        tally.error(type(exc).__name__)
    except ValueError:
        tally.error("response too large")


async def _open_loop(session: aiohttp.ClientSession, body: Any, config: LoadConfig, tally: _Tally,
                     stop_at: float) -> None:
    tasks = []
    start = time.perf_counter()
    for index in range(config.max_requests):
        send_at = start + index / config.rate_qps
        if send_at >= stop_at:
            break
        await asyncio.sleep(max(0.0, send_at - time.perf_counter()))
        tasks.append(asyncio.create_task(_one(session, body, tally)))
    await asyncio.gather(*tasks)


async def _closed_loop(session: aiohttp.ClientSession, body: Any, config: LoadConfig, tally: _Tally,
                       stop_at: float) -> None:
    async def client() -> None:
        while tally.sent < config.max_requests and time.perf_counter() < stop_at:
            await _one(session, body, tally)

    await asyncio.gather(*(client() for _ in range(config.clients)))


def _summarise(config: LoadConfig, tally: _Tally, duration_s: float, batches: dict[int, int],
               note: str | None = None) -> LoadResult:
    latencies = tally.latencies_s
    p50, p99 = (float(x) for x in np.percentile(latencies, [50, 99])) if latencies else (None, None)
    counted = {size: n for size, n in sorted(batches.items()) if n > 0}
    total = sum(counted.values())
    return LoadResult(
        url=config.url,
        mode=config.mode,
        sent=tally.sent,
        ok=len(latencies),
        errors=dict(sorted(tally.errors.items())),
        duration_s=duration_s,
        achieved_qps=len(latencies) / duration_s,
        latency_s_p50=p50,
        latency_s_p99=p99,
        batch_sizes=counted,
        mean_batch_size=sum(s * n for s, n in counted.items()) / total if total else None,
        batch_sizes_note=note,
    )
