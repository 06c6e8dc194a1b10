"""The hand-composed comparison does the job it stands for: retries UNAVAILABLE up to the edge's
attempts, opens its breaker after the edge's consecutive failures, holds the bulkhead's limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio
import pytest
from aiobreaker import CircuitBreakerError

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_resilience_mesh.bench.hand_composed import HandComposedStub
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc

pytestmark = pytest.mark.timeout(60)

EDGE = from_dict(
    EdgePolicy,
    {
        "deadline": {"total_s": 5.0, "attempt_s": 2.0},
        "retry": {"max_attempts": 3, "base_backoff_s": 0.001, "max_backoff_s": 0.002},
        "breaker": {"consecutive_failures": 4, "open_s": 30.0},
        "bulkhead": {"max_concurrent": 2},
    },
)


class _Scripted(profile_pb2_grpc.ProfileServiceServicer):
    """Fails while `failures` lasts, then answers after `hold` is set; counts attempts and the
    most it held at once."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0
        self.holding = 0
        self.most_held = 0
        self.hold = asyncio.Event()
        self.hold.set()
        self.two_held = asyncio.Event()

    async def GetProfile(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "scripted")
        self.holding += 1
        self.most_held = max(self.most_held, self.holding)
        if self.holding >= 2:
            self.two_held.set()
        try:
            await self.hold.wait()
        finally:
            self.holding -= 1
        return profile_pb2.GetProfileResponse(profile=profile_pb2.Profile(user_id="u1"))


@asynccontextmanager
async def _hand(servicer: _Scripted) -> AsyncIterator[HandComposedStub]:
    server = grpc.aio.server()
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield HandComposedStub(profile_pb2_grpc.ProfileServiceStub(channel), EDGE)
    finally:
        await server.stop(None)


REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


async def test_unavailable_is_retried_within_the_edges_attempts() -> None:
    servicer = _Scripted(failures=2)
    async with _hand(servicer) as stub:
        answer = await stub.GetProfile(REQUEST, timeout=5.0)
    assert answer.profile.user_id == "u1"
    assert servicer.attempts == 3


async def test_the_breaker_opens_after_the_edges_consecutive_failures() -> None:
    servicer = _Scripted(failures=100)
    async with _hand(servicer) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as first:
            await stub.GetProfile(REQUEST, timeout=5.0)
        with pytest.raises(CircuitBreakerError):
            await stub.GetProfile(REQUEST, timeout=5.0)
    assert first.value.code() is grpc.StatusCode.UNAVAILABLE
    assert servicer.attempts == 4


async def test_the_bulkhead_holds_its_limit() -> None:
    servicer = _Scripted(failures=0)
    servicer.hold.clear()
    async with _hand(servicer) as stub:
        calls = [asyncio.ensure_future(stub.GetProfile(REQUEST, timeout=5.0)) for _ in range(5)]
        await asyncio.wait_for(servicer.two_held.wait(), timeout=10.0)
        assert stub._bulkhead.locked()  # the other three wait for a slot, not for the server
        servicer.hold.set()
        await asyncio.gather(*calls)
    assert servicer.most_held == 2
    assert servicer.attempts == 5
