"""Open-loop load on a backend of fixed capacity behind one AdaptiveThrottle, on a fake clock."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import grpc
import grpc.aio

from grpc_aio_resilience.context import CallContext
from grpc_aio_resilience.errors import ClientThrottledError
from grpc_aio_resilience.throttle import AdaptiveThrottle
from grpc_aio_resilience.throttle_policy import ThrottlePolicy
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import FakeCall, recording_bus, rpc_error

METHOD = "/mesh.v1.RecommendationService/Recommend"


@dataclass
class Second:
    """What happened in one simulated second."""

    wanted: int = 0
    reached: int = 0
    accepted: int = 0
    throttled: int = 0


@dataclass
class CapacityBackend:
    """Accepts `capacity_per_s` attempts a second (a token bucket with 100 ms of burst) and
    refuses the rest with RESOURCE_EXHAUSTED and a pushback, as a server's limit does."""

    clock: FakeClock
    capacity_per_s: float
    tokens: float = 0.0
    last_s: float = field(default=-math.inf)

    async def __call__(self, ctx: CallContext) -> FakeCall:
        ctx.sent += 1
        now = self.clock.now()
        burst = max(1.0, self.capacity_per_s / 10)
        elapsed = 0.0 if self.last_s == -math.inf else now - self.last_s
        self.tokens = min(burst, self.tokens + self.capacity_per_s * elapsed)
        self.last_s = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return FakeCall("ok", None)
        raise rpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "200")


def throttle_on(clock: FakeClock, seed: int = 7, **policy: float) -> AdaptiveThrottle:
    settings = ThrottlePolicy(enabled=True, **policy)  # type: ignore[arg-type]
    return AdaptiveThrottle(settings, clock, recording_bus()[0], random.Random(seed))


def context() -> CallContext:
    details = grpc.aio.ClientCallDetails(METHOD.encode(), None, None, None, None)
    return CallContext("recommendation", METHOD, None, details, _never)


async def _never(details: grpc.aio.ClientCallDetails, request: object) -> None:
    raise AssertionError("the simulation's backend stands in for the wire")


async def run_load(
    throttle: AdaptiveThrottle,
    backend: CapacityBackend,
    demand_per_s: float,
    seconds: int,
) -> list[Second]:
    """`demand_per_s` attempts a second, evenly spaced, for `seconds`; one Second each."""
    clock = backend.clock
    interval_s = 1.0 / demand_per_s
    tally: list[Second] = []
    for _ in range(seconds):
        second = Second()
        for _ in range(round(demand_per_s)):
            clock.advance(interval_s)
            second.wanted += 1
            ctx = context()
            try:
                await throttle.execute(ctx, backend)
                second.accepted += 1
            except ClientThrottledError:
                second.throttled += 1
            except grpc.aio.AioRpcError:
                pass
            second.reached += ctx.sent
        tally.append(second)
    return tally


def totals(seconds: list[Second]) -> Second:
    out = Second()
    for s in seconds:
        out.wanted += s.wanted
        out.reached += s.reached
        out.accepted += s.accepted
        out.throttled += s.throttled
    return out
