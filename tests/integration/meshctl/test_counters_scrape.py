"""The runner reads the services' /metrics without blocking its event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from grpc_resilience_mesh.client.counters import scrape


@pytest.fixture
async def slow_metrics() -> AsyncIterator[str]:
    async def metrics(request: web.Request) -> web.Response:
        await asyncio.sleep(0.3)
        return web.Response(text='mesh_server_calls_total{method="/x.Y/Z"} 3.0\n')

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        await runner.cleanup()


async def test_a_slow_service_does_not_stall_the_loop(slow_metrics: str) -> None:
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    try:
        snap = await scrape({"payment": slow_metrics, "gone": "http://127.0.0.1:1/metrics"})
    finally:
        done.set()
        await task
    assert snap.total("mesh_server_calls_total", "payment") == 3.0
    assert snap.unreachable == ["gone"]
    assert ticks >= 5, f"the loop ran {ticks} times during a 0.3 s scrape"
