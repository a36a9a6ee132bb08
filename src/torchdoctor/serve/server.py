"""The HTTP front end: aiohttp on loopback by default, the batcher behind /predict.

Endpoints:
  * ``POST /predict``: body and response in torchdoctor.serve.model; errors are JSON
    ``{"error": message}`` with 400 (malformed), 422 (wrong shape/dtype), 503 (queue full, with
    Retry-After; or shutting down), 504 (timed out), 500 (the model raised on this batch);
  * ``GET /health``: ``{"status": "ok", "model", "max_batch_size", "max_delay_ms", "queue_depth",
    "example": a ready-to-post /predict body}``;
  * ``GET /metrics``: Prometheus text (torchdoctor.serve.metrics).
A client that disconnects cancels its handler (aiohttp's handler_cancellation), so a queued
request is skipped; the server keeps serving the others.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from torchdoctor.serve.batcher import BatcherConfig, DynamicBatcher
from torchdoctor.serve.errors import QueueFullError, RequestError
from torchdoctor.serve.metrics import ServerMetrics
from torchdoctor.serve.model import TensorModel

LOOPBACK = "127.0.0.1"
_BATCHER = web.AppKey("batcher", DynamicBatcher)
_METRICS = web.AppKey("metrics", ServerMetrics)
_MODEL = web.AppKey("model", TensorModel)


def build_app(model: TensorModel, config: BatcherConfig) -> web.Application:
    """The aiohttp application; the batcher starts and stops with it."""
    app = web.Application()
    app[_MODEL] = model
    app[_METRICS] = ServerMetrics.create(config.max_batch_size)
    app.cleanup_ctx.append(_batcher_context(config))
    app.add_routes([web.post("/predict", _predict), web.get("/health", _health), web.get("/metrics", _metrics)])
    return app


def _batcher_context(config: BatcherConfig) -> Callable:
    async def context(app: web.Application):  # type: ignore[no-untyped-def]
        async with DynamicBatcher(app[_MODEL].run_batch, config, app[_METRICS].observe_batch) as batcher:
            app[_BATCHER] = batcher
            yield

    return context


async def _predict(request: web.Request) -> web.Response:
    start = time.perf_counter()
    app = request.app
    metrics, batcher = app[_METRICS], app[_BATCHER]
    headers = {}
    try:
        sample = app[_MODEL].parse(await request.read())
        metrics.queue_depth.set(batcher.queue_depth + 1)
        response = web.json_response({"outputs": await batcher.submit(sample)}, dumps=_dumps)
    except RequestError as exc:
        if isinstance(exc, QueueFullError):
            headers["Retry-After"] = "1"
        response = web.json_response({"error": str(exc)}, status=exc.status, headers=headers, dumps=_dumps)
    finally:
        metrics.queue_depth.set(batcher.queue_depth)
    metrics.requests.labels(status=str(response.status)).inc()
    metrics.latency.observe(time.perf_counter() - start)
    return response


async def _health(request: web.Request) -> web.Response:
    app = request.app
    config = app[_BATCHER].config
    body = {
        "status": "ok",
        "model": app[_MODEL].spec,
        "max_batch_size": config.max_batch_size,
        "max_delay_ms": config.max_delay_ms,
        "queue_depth": app[_BATCHER].queue_depth,
        "example": app[_MODEL].example_body,
    }
    return web.json_response(body, dumps=_dumps)


async def _metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[_METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def _dumps(value: object) -> str:
    return orjson.dumps(value).decode()


async def start_server(app: web.Application, host: str = LOOPBACK, port: int = 0) -> tuple[web.AppRunner, str]:
    """Start `app` on host:port (0: any free port); return its runner and base URL."""
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_host, bound_port = runner.addresses[0][:2]
    return runner, f"http://{bound_host}:{bound_port}"


async def serve_forever(app: web.Application, host: str, port: int, on_ready: Callable[[str], None]) -> None:
    """Run `app` until cancelled (Ctrl-C), calling `on_ready(url)` once it listens."""
    runner, url = await start_server(app, host, port)
    on_ready(url)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
