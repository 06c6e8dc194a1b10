"""Fake wire calls for unit tests: a scripted dependency behind a real pipeline, no network."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator
from typing import Any, TypeAlias

import grpc
import grpc.aio

from grpc_aio_resilience.context import CallContext
from grpc_aio_resilience.events import Event, EventBus
from grpc_aio_resilience.pipeline import Pipeline
from grpc_resilience_mesh.services.v1 import payment_pb2, profile_pb2, recommendation_pb2
from tests.support.fake_clock import FakeClock

GET_PROFILE = "/mesh.v1.ProfileService/GetProfile"
CHARGE = "/mesh.v1.PaymentService/Charge"
RECOMMEND = "/mesh.v1.RecommendationService/Recommend"
POPULAR = "/mesh.v1.RecommendationService/Popular"
REQUESTS: dict[str, Any] = {
    GET_PROFILE: profile_pb2.GetProfileRequest(user_id="u1"),
    CHARGE: payment_pb2.ChargeRequest(user_id="u1", amount_cents=100, currency="USD"),
    RECOMMEND: recommendation_pb2.RecommendRequest(user_id="u1"),
    POPULAR: recommendation_pb2.PopularRequest(),
}

Reply: TypeAlias = grpc.StatusCode | tuple[grpc.StatusCode, str] | None
"""None = OK; a code; or (code, grpc-retry-pushback-ms value)."""


class FakeCall:
    """Stands in for a finished grpc.aio call: awaiting it returns or raises at once."""

    def __init__(self, response: Any, error: grpc.aio.AioRpcError | None) -> None:
        self._response = response
        self._error = error
        self.cancelled = False

    def __await__(self) -> Generator[Any, None, Any]:
        if self._error is not None:
            raise self._error
        return self._response
        yield  # makes this a generator

    def cancel(self) -> bool:
        self.cancelled = True
        return True


def rpc_error(code: grpc.StatusCode, pushback_ms: str | None = None) -> grpc.aio.AioRpcError:
    trailers = grpc.aio.Metadata()
    if pushback_ms is not None:
        trailers.add("grpc-retry-pushback-ms", pushback_ms)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailers, "fake")


class FakeWire:
    """A scripted dependency: `reply(method, n)` decides the n-th (1-based) attempt's outcome.
    `hang_s` makes every attempt last that long (or until its deadline: DEADLINE_EXCEEDED)."""

    def __init__(
        self, clock: FakeClock, reply: Callable[[str, int], Reply], hang_s: float = 0.0
    ) -> None:
        self.clock = clock
        self.reply = reply
        self.hang_s = hang_s
        self.counts: Counter[str] = Counter()
        self.timeouts_s: list[float | None] = []
        self.started_at_s: list[float] = []

    async def continuation(self, details: grpc.aio.ClientCallDetails, request: Any) -> FakeCall:
        method = details.method.decode()
        self.counts[method] += 1
        self.timeouts_s.append(details.timeout)
        self.started_at_s.append(self.clock.now())
        if self.hang_s:
            timeout = details.timeout if details.timeout is not None else float("inf")
            await self.clock.sleep(min(self.hang_s, timeout))
            if timeout < self.hang_s:
                return FakeCall(None, rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED))
        outcome = self.reply(method, self.counts[method])
        if outcome is None:
            return FakeCall(f"response to {method}", None)
        if isinstance(outcome, tuple):
            return FakeCall(None, rpc_error(outcome[0], outcome[1]))
        return FakeCall(None, rpc_error(outcome))


def recording_bus() -> tuple[EventBus, list[Event]]:
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    return bus, seen


async def call(
    pipeline: Pipeline,
    wire: FakeWire,
    method: str = GET_PROFILE,
    *,
    request: Any = None,
    timeout_s: float | None = None,
    dependency: str = "dep",
) -> Any:
    """One logical call through `pipeline`, as ResilienceInterceptor would start it."""
    details = grpc.aio.ClientCallDetails(method.encode(), timeout_s, None, None, None)
    deadline_s = wire.clock.now() + timeout_s if timeout_s is not None else float("inf")
    ctx = CallContext(
        dependency,
        method,
        REQUESTS[method] if request is None else request,
        details,
        wire.continuation,
        deadline_s,
    )
    finished = await pipeline.run(ctx)
    return await finished
