"""Idle TCP connections (no HTTP/2 preface) against services started with serve(): a thousand
of them no longer starve new clients of descriptors, a port past its cap refuses (and the log
says so), and silent connections are closed after HANDSHAKE_TIMEOUT_S."""

from __future__ import annotations

import asyncio
import logging
import resource
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import grpc.aio
import pytest

from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    profile_pb2,
    profile_pb2_grpc,
)
from tests.integration.hardening.inproc_services import serving
from tests.support.front_door import bearer
from tests.support.polling import await_until

KEY = "idle-test-key"
IDLE = 1100
COMMON_SOFT_LIMIT = 1024
HOLDER = """
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held = [socket.create_connection((host, port), timeout=5) for _ in range(count)]
print(len(held), flush=True)
sys.stdin.read()
"""
"""Opens `count` connections, sends nothing, holds them until its stdin closes. A process of its
own: its descriptors are not the service's."""


@contextmanager
def soft_descriptor_limit(limit: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4 * IDLE:
        pytest.skip(f"hard descriptor limit {hard}: too low to hold {IDLE} connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@asynccontextmanager
async def idle_connections(addr: str, count: int) -> AsyncIterator[None]:
    host, _, port = addr.rpartition(":")
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, host, port, str(count),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert holder.stdin is not None and holder.stdout is not None
    try:
        line = await asyncio.wait_for(holder.stdout.readline(), timeout=30)
        assert line.strip() == str(count).encode(), line
        yield
    finally:
        holder.stdin.close()
        try:
            await asyncio.wait_for(holder.wait(), timeout=10)
        except TimeoutError:
            holder.kill()
            await holder.wait()


async def test_a_thousand_idle_connections_leave_new_clients_answered() -> None:
    env = {"MESH_API_KEYS": KEY, "HANDSHAKE_TIMEOUT_S": "60"}  # held, not timed out, here
    with soft_descriptor_limit(COMMON_SOFT_LIMIT):
        async with serving(env=env) as served:
            async with idle_connections(served.listen["gateway"], IDLE):
                async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
                    reply = await gateway_pb2_grpc.GatewayStub(channel).GetHome(
                        gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3),
                        timeout=10,
                        metadata=bearer(KEY),
                    )
    assert reply.profile.user_id == "u-0001"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def said(self, message: str) -> bool:
        return any(r.getMessage() == message for r in self.records)


async def _until_eof(reader: asyncio.StreamReader) -> None:
    while await reader.read(1 << 16):  # the server's SETTINGS, its GOAWAY, then the end
        pass


async def _closed_by_server(reader: asyncio.StreamReader, within_s: float) -> bool:
    try:
        await asyncio.wait_for(_until_eof(reader), within_s)
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


async def _open(addr: str, count: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    host, _, port = addr.rpartition(":")
    return [await asyncio.open_connection(host, int(port)) for _ in range(count)]


def _close(conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> None:
    for _, writer in conns:
        writer.close()


async def _keep_full(addr: str, count: int, until: float, done: Lines) -> None:
    """Hold `count` silent connections, reopening each the server closes, until `done` logs
    the cap or `until` (monotonic) passes."""
    conns = await _open(addr, count)
    try:
        while time.monotonic() < until and not done.said(AT_CAP):
            for i, (reader, writer) in enumerate(conns):
                if reader.at_eof() or writer.is_closing():
                    writer.close()
                    conns[i] = (await _open(addr, 1))[0]
                elif await _closed_by_server(reader, 0.001):
                    writer.close()
            await asyncio.sleep(0.05)
    finally:
        _close(conns)


AT_CAP = "connections at the cap: new ones are refused"
ROOM_AGAIN = "connections below the cap again"


async def test_past_the_cap_connections_are_refused_logged_and_silent_ones_closed() -> None:
    env = {"MAX_CONNECTIONS": "40", "HANDSHAKE_TIMEOUT_S": "1.5"}
    lines = Lines()
    async with serving(("profile",), env=env) as served:
        addr = served.listen["profile"]
        logging.getLogger().addHandler(lines)  # after serve() set up its own handlers
        try:
            conns = await _open(addr, 60)
            started = time.monotonic()
            closed = await asyncio.gather(*(_closed_by_server(r, 0.5) for r, _ in conns))
            assert sum(closed) >= 20, "past MAX_CONNECTIONS=40, connections are refused at once"
            later = await asyncio.gather(*(_closed_by_server(r, 4.0) for r, _ in conns))
            assert all(later), "silent connections are closed after HANDSHAKE_TIMEOUT_S"
            assert time.monotonic() - started < 5.0
            _close(conns)

            await _keep_full(addr, 60, time.monotonic() + 8, lines)
            assert lines.said(AT_CAP)
            at_cap = next(r for r in lines.records if r.getMessage() == AT_CAP)
            assert at_cap.levelno == logging.WARNING
            assert at_cap.cap == "MAX_CONNECTIONS=40"  # type: ignore[attr-defined]
            await await_until(lambda: lines.said(ROOM_AGAIN), timeout_s=8.0, what=ROOM_AGAIN)
        finally:
            logging.getLogger().removeHandler(lines)
        async with grpc.aio.insecure_channel(addr) as channel:
            reply = await profile_pb2_grpc.ProfileServiceStub(channel).GetProfile(
                profile_pb2.GetProfileRequest(user_id="u-0001"), timeout=5
            )
    assert reply.profile.user_id == "u-0001"
