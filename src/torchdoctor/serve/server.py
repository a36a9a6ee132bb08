"""The HTTP front end: aiohttp on loopback by default, the batcher behind /predict.

Endpoints:
  * ``POST /predict``: body and response in torchdoctor.serve.model; errors are JSON
    ``{"error": message}`` (plus ``"field"`` when a request field is at fault) with 400 (malformed,
    or values outside what the model takes), 422 (wrong shape/dtype), 413 (body over
    MAX_BODY_BYTES), 415 (not sent as application/json), 503 (queue full, with Retry-After; or
    shutting down), 504 (timed out), 500 (the model failed on this request run alone: a generic
    message, the details in the server log);
  * ``GET /health``: ``{"status": "ok", "model", "max_batch_size", "max_delay_ms", "queue_depth",
    "example": a ready-to-post /predict body}``;
  * ``GET /metrics``: Prometheus text (torchdoctor.serve.metrics).
A client that disconnects cancels its handler (aiohttp's handler_cancellation), so a queued
request is skipped; the server keeps serving the others. A connection that has not sent a
complete request head within HEADER_TIMEOUT_S (also the idle keep-alive limit) is closed.

Every request must name the bound address in its Host header, and an Origin header, when sent, must
be that address too (403 otherwise): a web page elsewhere cannot make the browser post to a local
server (DNS rebinding, cross-site requests); bound to a wildcard address, Host is not checked.
Any other failure is a JSON 500 with a generic message; the traceback goes to the log.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from typing import Awaitable, Callable
from urllib.parse import urlsplit

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from torchdoctor.serve.batcher import BatcherConfig, DynamicBatcher
from torchdoctor.serve.errors import (BodyTooLargeError, ForbiddenOriginError, QueueFullError, RequestError,
                                      UnsupportedMediaError)
from torchdoctor.serve.metrics import ServerMetrics
from torchdoctor.serve.model import TensorModel

LOOPBACK = "127.0.0.1"
#: The largest request body read (a 413 beyond).
MAX_BODY_BYTES = 1024 * 1024
#: Seconds a connection has to send a complete request head (request line and headers), from
#: its opening or from the end of its previous response; the server closes it after. A client
#: that trickles bytes gains nothing: the deadline is not moved by partial data.
HEADER_TIMEOUT_S = 5.0
LOG = logging.getLogger("torchdoctor.serve")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_BATCHER = web.AppKey("batcher", DynamicBatcher)
_METRICS = web.AppKey("metrics", ServerMetrics)
_MODEL = web.AppKey("model", TensorModel)


class BoundAddress:
    """The (host, port) pairs a request may name: filled by `start_server` once bound; None while
    any host is allowed (unbound, or bound to a wildcard address)."""

    def __init__(self) -> None:
        self.allowed: set[tuple[str, int]] | None = None

    def bind(self, host: str, port: int) -> None:
        if host in ("", "0.0.0.0", "::"):
            self.allowed = None
            return
        names = _LOOPBACK_NAMES if host in _LOOPBACK_NAMES or _is_loopback(host) else (host,)
        self.allowed = {(name.lower(), port) for name in names}

    def permits(self, authority: str | None, default_port: int = 80) -> bool:
        if self.allowed is None:
            return True
        if not authority:
            return False
        parts = urlsplit(f"//{authority}")
        try:
            port = parts.port or default_port
        except ValueError:
            return False
        return ((parts.hostname or "").lower(), port) in self.allowed


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_ADDRESS = web.AppKey("address", BoundAddress)


def build_app(model: TensorModel, config: BatcherConfig) -> web.Application:
    """The aiohttp application; the batcher starts and stops with it."""
    app = web.Application(middlewares=[_json_errors, _same_origin], client_max_size=MAX_BODY_BYTES)
    app[_MODEL] = model
    app[_METRICS] = ServerMetrics.create(config.max_batch_size)
    app[_ADDRESS] = BoundAddress()
    app.cleanup_ctx.append(_batcher_context(config))
    app.add_routes([web.post("/predict", _predict), web.get("/health", _health), web.get("/metrics", _metrics)])
    return app


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error is JSON `{"error": ...}`; an unexpected one is a generic 500, logged in full."""
    try:
        return await handler(request)
    except RequestError as exc:
        return _error(exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {k: v for k, v in exc.headers.items() if k.lower() not in ("content-type", "content-length")}
        return web.json_response({"error": exc.reason.lower()}, status=exc.status, headers=headers, dumps=_dumps)
    except Exception:
        LOG.exception("unexpected error serving %s %s", request.method, request.path)
        return web.json_response({"error": "internal server error (details in the server log)"}, status=500,
                                 dumps=_dumps)


@web.middleware
async def _same_origin(request: web.Request, handler: Handler) -> web.StreamResponse:
    """403 unless Host, and Origin when sent, name the address the server is bound to."""
    address = request.app[_ADDRESS]
    if not address.permits(request.headers.get("Host")):
        raise ForbiddenOriginError(f"the Host header {request.headers.get('Host')!r} does not name this server")
    origin = request.headers.get("Origin")
    if origin is not None and address.allowed is not None:
        parts = urlsplit(origin)
        default = 443 if parts.scheme == "https" else 80
        if parts.scheme not in ("http", "https") or not address.permits(parts.netloc, default):
            raise ForbiddenOriginError(f"requests from {origin!r} are not accepted")
    return await handler(request)


def _error(exc: RequestError) -> web.Response:
    body = {"error": str(exc), **({"field": exc.field} if exc.field else {})}
    headers = {"Retry-After": "1"} if isinstance(exc, QueueFullError) else {}
    return web.json_response(body, status=exc.status, headers=headers, dumps=_dumps)


def _batcher_context(config: BatcherConfig) -> Callable:
    async def context(app: web.Application):  # type: ignore[no-untyped-def]
        async with DynamicBatcher(app[_MODEL].run_batch, config, app[_METRICS].observe_batch) as batcher:
            await batcher.warm_up(app[_MODEL].example_items(config.max_batch_size))
            app[_BATCHER] = batcher
            yield

    return context


async def _predict(request: web.Request) -> web.Response:
    start = time.perf_counter()
    app = request.app
    metrics, batcher = app[_METRICS], app[_BATCHER]
    try:
        if request.content_type != "application/json":
            raise UnsupportedMediaError(f"the body must be JSON sent as Content-Type: application/json, "
                                        f"not {request.content_type}")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise BodyTooLargeError(f"the body is larger than {MAX_BODY_BYTES} bytes") from None
        sample = app[_MODEL].parse(body)
        metrics.queue_depth.set(batcher.queue_depth + 1)
        response = web.json_response({"outputs": await batcher.submit(sample)}, dumps=_dumps)
    except RequestError as exc:
        response = _error(exc)
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


async def start_server(app: web.Application, host: str = LOOPBACK, port: int = 0,
                       header_timeout_s: float = HEADER_TIMEOUT_S) -> tuple[web.AppRunner, str]:
    """Start `app` on host:port (0: any free port); return its runner and base URL.

    `header_timeout_s` bounds the wait for a request head: aiohttp's keep-alive deadline starts when
    a connection opens (and again after each response), partial data does not move it, and an
    unfinished head at the deadline closes the connection, so it is the header-read timeout."""
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, keepalive_timeout=header_timeout_s)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    app[_ADDRESS].bind(host, bound_port)
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    return runner, f"http://{shown}:{bound_port}"


async def serve_forever(app: web.Application, host: str, port: int, on_ready: Callable[[str], None]) -> None:
    """Run `app` until cancelled (Ctrl-C), calling `on_ready(url)` once it listens."""
    runner, url = await start_server(app, host, port)
    on_ready(url)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
