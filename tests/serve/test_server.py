"""The real aiohttp server on loopback, driven by aiohttp clients and the real load generator."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

import aiohttp
import pytest

from torchdoctor.infer import load_model
from torchdoctor.serve import BatcherConfig, LoadConfig, TensorModel, build_app, run_load, start_server
from torchdoctor.serve.errors import ServeConfigError
from torchdoctor.serve.scrape import batch_size_counts

MODEL = TensorModel(load_model("tests.serve.models:moody"))
GOOD = {"inputs": [[1, 2, 3, 4, 5, 6, 7, 8]]}


def with_server(scenario: Callable[[str, aiohttp.ClientSession], Awaitable[Any]], **limits: Any) -> Any:
    async def run() -> Any:
        runner, url = await start_server(build_app(MODEL, BatcherConfig(**limits)))
        try:
            async with aiohttp.ClientSession(url) as session:
                return await scenario(url, session)
        finally:
            await runner.cleanup()

    return asyncio.run(run())


async def post(session: aiohttp.ClientSession, body: Any, **headers: str) -> tuple[int, Any]:
    """POST /predict; bytes are sent as they are, declared as JSON unless `headers` say otherwise."""
    if isinstance(body, bytes):
        headers = {"Content-Type": "application/json", **headers}
    async with session.post("/predict", data=body if isinstance(body, bytes) else None,
                            json=None if isinstance(body, bytes) else body,
                            headers={k.replace("_", "-"): v for k, v in headers.items()}) as response:
        return response.status, await response.json()


def test_bad_bodies_get_a_4xx_with_a_message_and_the_server_keeps_serving() -> None:
    async def scenario(url: str, session: aiohttp.ClientSession) -> list:
        return [
            await post(session, b"{not json"),
            await post(session, {"inputs": [[1, 2]]}),
            await post(session, {"inputs": [[0.5] * 8]}),
            await post(session, GOOD),
        ]

    malformed, short, fractional, good = with_server(scenario)
    assert malformed[0] == 400 and "must be JSON" in malformed[1]["error"]
    assert short == (422, {"error": "input 0 has shape [2]; the model takes [8]", "field": "inputs[0]"})
    assert fractional[0] == 422 and "holds fractions" in fractional[1]["error"]
    assert good[0] == 200 and len(good[1]["outputs"]) == 4


def test_a_model_error_gives_a_generic_500_to_its_request_only() -> None:
    async def scenario(url: str, session: aiohttp.ClientSession) -> list:
        batch = [{"inputs": [[99] * 8]}, GOOD, GOOD, GOOD]  # batched together, poison among them
        return await asyncio.gather(*(post(session, body) for body in batch))

    poisoned, *good = with_server(scenario, max_batch_size=4, max_delay_ms=50)
    assert poisoned == (500, {"error": "the model failed on this request (details in the server log)"})
    assert [status for status, _ in good] == [200, 200, 200]


def test_a_client_that_disconnects_mid_batch_does_not_disturb_the_server() -> None:
    async def scenario(url: str, session: aiohttp.ClientSession) -> tuple:
        with pytest.raises(asyncio.TimeoutError):
            await session.post("/predict", json={"inputs": [[98] * 8]}, timeout=aiohttp.ClientTimeout(total=0.05))
        status, _ = await post(session, GOOD)
        async with session.get("/health") as response:
            return status, await response.json()

    status, health = with_server(scenario)
    assert status == 200 and health["status"] == "ok" and health["example"]["inputs"][0][:1]


def test_closed_and_open_loop_load_report_rates_latency_and_batch_sizes() -> None:
    async def scenario(url: str, session: aiohttp.ClientSession) -> tuple:
        closed = await run_load(LoadConfig(url=url, mode="closed", clients=16, max_requests=120, duration_s=20))
        opened = await run_load(LoadConfig(url=url, mode="open", rate_qps=200, max_requests=60, duration_s=20))
        async with session.get("/metrics") as response:
            return closed, opened, await response.text()

    closed, opened, metrics = with_server(scenario, max_batch_size=8, max_delay_ms=5)
    for result in (closed, opened):
        assert result.errors == {} and result.latency_s_p50 <= result.latency_s_p99
    assert (closed.sent, closed.ok, opened.sent, opened.ok) == (120, 120, 60, 60)
    assert sum(s * n for s, n in closed.batch_sizes.items()) == 120
    assert max(closed.batch_sizes) <= 8 and closed.mean_batch_size > 1  # 16 clients do batch up
    assert sum(batch_size_counts(metrics).values()) == sum(closed.batch_sizes.values()) + sum(
        opened.batch_sizes.values())
    assert 'torchdoctor_requests_total{status="200"} 180.0' in metrics


def test_load_refuses_targets_off_loopback() -> None:
    with pytest.raises(ServeConfigError, match="loopback only"):
        LoadConfig(url="http://example.com:8000")
