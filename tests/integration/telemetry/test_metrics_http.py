"""A service's /metrics endpoint: what a scraper reads, and what idle or slow clients cannot hold
(no thread per connection, a cap, idle and slow-header connections closed within seconds)."""

from __future__ import annotations

import asyncio
import gzip
import os
import threading
import time
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.telemetry.metrics_http import MetricsHttpLimits

LIMITS = MetricsHttpLimits()


@pytest.fixture
async def port() -> AsyncIterator[int]:
    metrics = MeshMetrics(CollectorRegistry(), "gateway")
    bound = metrics.start_http("127.0.0.1:0")
    try:
        yield bound
    finally:
        await metrics.stop_http()


async def ask(port: int, head: str) -> tuple[str, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode())
    raw = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    top, _, body = raw.partition(b"\r\n\r\n")
    status, *lines = top.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return status, headers, body


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), seconds) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


async def test_a_scraper_reads_every_format_it_asks_for(port: int) -> None:
    status, headers, body = await ask(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.endswith(" 200 OK")
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert b'mesh_service_info{service="gateway"} 1.0' in body
    openmetrics = "Accept: application/openmetrics-text; version=1.0.0\r\nAccept-Encoding: gzip"
    _, headers, body = await ask(port, f"GET /metrics HTTP/1.1\r\n{openmetrics}\r\n\r\n")
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert headers["Content-Encoding"] == "gzip" and gzip.decompress(body).endswith(b"# EOF\n")
    _, _, body = await ask(port, "GET /metrics?name[]=mesh_service_info HTTP/1.1\r\n\r\n")
    assert b"mesh_service_info" in body and b"mesh_client_calls_total" not in body
    assert (await ask(port, "GET /other HTTP/1.1\r\n\r\n"))[0] == "HTTP/1.1 404 Not Found"
    assert (await ask(port, "POST /metrics HTTP/1.1\r\n\r\n"))[0].startswith("HTTP/1.1 405")
    assert (await ask(port, "nonsense\r\n\r\n"))[0] == "HTTP/1.1 400 Bad Request"


async def test_silent_and_slow_clients_are_closed_within_the_header_timeout(port: int) -> None:
    silent, _ = await asyncio.open_connection("127.0.0.1", port)
    slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()

    slow.write(b"GET /metrics HTTP/1.1\r\n")

    async def drip() -> None:  # one header byte every 0.1 s
        while not slow.transport.is_closing():
            slow.write(b"X")
            await asyncio.sleep(0.1)

    dripping = asyncio.create_task(drip())
    try:
        margin = LIMITS.header_timeout_s + 3
        assert await closed_within(silent, margin), "a silent connection was kept"
        assert await closed_within(slow_reader, margin - (time.monotonic() - started)), (
            "a connection dripping its headers was kept"
        )
    finally:
        dripping.cancel()
        slow.close()


async def test_500_idle_connections_cost_no_thread_and_scrapes_go_on(port: int) -> None:
    threads_before, fds_before = threading.active_count(), len(os.listdir("/proc/self/fd"))
    held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(500)]
    try:
        await asyncio.sleep(0.3)
        assert threading.active_count() <= threads_before  # none started for them
        server_fds = len(os.listdir("/proc/self/fd")) - fds_before - len(held)
        assert server_fds <= LIMITS.max_connections + 4, server_fds
        deadline = time.monotonic() + LIMITS.header_timeout_s + 5
        while time.monotonic() < deadline:  # the cap is full of idle ones until they time out
            try:
                status = (await ask(port, "GET /metrics HTTP/1.1\r\n\r\n"))[0]
            except (ConnectionResetError, ValueError):
                status = "refused"
            if status == "HTTP/1.1 200 OK":
                break
            await asyncio.sleep(0.2)
        assert status == "HTTP/1.1 200 OK", "no scrape answered while idle connections were held"
    finally:
        for _, writer in held:
            writer.close()


async def test_at_the_cap_a_scrape_gets_in_and_the_longest_silent_connection_goes(
    port: int,
) -> None:
    """Round 4, item 10: at the cap the newcomer was closed, so one process re-opening silent
    connections locked scrapers out (answered 6 of 30 with 40 held, measured); now the
    connection that has waited longest without a request head makes room."""
    held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(LIMITS.max_connections)]
    try:
        started = time.monotonic()
        status = (await ask(port, "GET /metrics HTTP/1.1\r\n\r\n"))[0]
        assert status == "HTTP/1.1 200 OK"
        assert time.monotonic() - started < LIMITS.header_timeout_s  # not once they timed out
        oldest, newest = held[0][0], held[-1][0]
        assert await closed_within(oldest, 2), "the longest silent connection was kept"
        assert not await closed_within(newest, 0.2), "a newer silent one was closed instead"
    finally:
        for _, writer in held:
            writer.close()
