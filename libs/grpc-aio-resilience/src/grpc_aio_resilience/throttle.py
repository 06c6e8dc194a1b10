"""Client-side adaptive throttling (Google SRE, "Handling Overload"), one per dependency edge.

Over a sliding window the edge counts `requests`, the attempts it wanted to send (those it
rejected itself included: that is what makes the rejection rate converge), and `accepts`, the
attempts the backend did not refuse for overload. An attempt is rejected here, at once and at
no cost to the backend, with probability max(0, (requests - k * accepts) / (requests + 1)):
at steady overload about k attempts reach the backend per one it accepts, and when the backend
recovers the accepts catch up and the window forgets the refusals within `window_s`.

An overload refusal is RESOURCE_EXHAUSTED (a server's shedding or admission limit, or a hop
relaying one), or UNAVAILABLE that carries a pushback (a server saying "busy, come back").
Every other answer is an accept, errors included: the backend took the attempt. UNAVAILABLE
without pushback is a transport failure (connection refused or reset), the breaker's and the
outlier ejector's business; counting it here would let this throttle hold back the probes a
half-open breaker needs. An attempt that never reached the wire (an open breaker inside), one
the caller cancelled and one that ended for the caller's own deadline (refused as unmeetable,
expired in the server's queue or on the way: grpc_aio_resilience.classify.callers_deadline) count
neither way: one caller's short deadlines are no overload of the backend everyone shares.
"""

from __future__ import annotations

import math
import random
from collections import deque
from typing import Any, ClassVar

import grpc
import grpc.aio

from grpc_aio_resilience import classify
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Next
from grpc_aio_resilience.errors import ClientThrottledError
from grpc_aio_resilience.events import ClientThrottled, EventBus
from grpc_aio_resilience.throttle_policy import ThrottlePolicy

BUCKETS = 10
"""The window is kept as this many buckets: it slides in steps of window_s / BUCKETS."""


def is_overload_refusal(err: grpc.aio.AioRpcError) -> bool:
    """The backend refused the attempt because it is overloaded (see the module docstring)."""
    code = err.code()
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return True
    return (
        code is grpc.StatusCode.UNAVAILABLE
        and classify.pushback_s(err.trailing_metadata()) is not None
    )


class ThrottleWindow:
    """Requests and accepts over the last `window_s`, in BUCKETS buckets, and the SRE formula.

    The window slides only when a bucket's time is over: until then every attempt counts in
    the bucket it found, after one comparison with the clock (`_current_until_s`)."""

    def __init__(self, policy: ThrottlePolicy, clock: Clock) -> None:
        self._k = policy.k
        self._min_requests = policy.min_requests
        self._bucket_s = policy.window_s / BUCKETS
        self._clock = clock
        self._buckets: deque[list[int]] = deque()  # [bucket index, requests, accepts]
        self._current: list[int] = []
        self._current_from_s = self._current_until_s = -math.inf
        self.requests = 0
        self.accepts = 0

    def _slide(self, now: float) -> None:
        """Makes the bucket `now` falls in current, forgetting those out of the window."""
        index = math.floor(now / self._bucket_s)
        buckets = self._buckets
        while buckets and buckets[0][0] <= index - BUCKETS:
            _, requests, accepts = buckets.popleft()
            self.requests -= requests
            self.accepts -= accepts
        if not buckets or buckets[-1][0] != index:
            buckets.append([index, 0, 0])
        self._current = buckets[-1]
        self._current_from_s = index * self._bucket_s
        self._current_until_s = (index + 1) * self._bucket_s

    def record(self, accepted: bool) -> None:
        now = self._clock.now()
        if not self._current_from_s <= now < self._current_until_s:
            self._slide(now)
        bucket = self._current
        bucket[1] += 1
        self.requests += 1
        if accepted:
            bucket[2] += 1
            self.accepts += 1

    def rejection_probability(self) -> float:
        now = self._clock.now()
        if not self._current_from_s <= now < self._current_until_s:
            self._slide(now)
        requests = self.requests
        if requests < self._min_requests:
            return 0.0
        return max(0.0, (requests - self._k * self.accepts) / (requests + 1))


class AdaptiveThrottle:
    """Pipeline strategy: rejects an attempt locally with the window's probability
    (ClientThrottledError, RESOURCE_EXHAUSTED) and counts every attempt it saw."""

    name: ClassVar[str] = "throttle"

    def __init__(
        self,
        policy: ThrottlePolicy,
        clock: Clock,
        bus: EventBus,
        rng: random.Random,
    ) -> None:
        self.window = ThrottleWindow(policy, clock)
        self._bus = bus
        self._rng = rng

    async def execute(self, ctx: CallContext, inner: Next) -> Any:
        self.admit(ctx)
        sent = ctx.sent
        try:
            call = await inner(ctx)
        except grpc.aio.AioRpcError as err:
            self.record_failure(ctx, sent, err)
            raise
        if ctx.sent > sent:
            self.window.record(accepted=True)
        return call

    def admit(self, ctx: CallContext) -> None:
        """Lets the attempt go on, or counts it as rejected here and raises ClientThrottledError."""
        window = self.window
        probability = window.rejection_probability()
        if probability > 0.0 and self._rng.random() < probability:
            window.record(accepted=False)
            self._bus.emit(
                ClientThrottled(
                    ctx.dependency,
                    ctx.method,
                    ctx.attempt,
                    probability,
                    window.requests,
                    window.accepts,
                )
            )
            raise ClientThrottledError(ctx.dependency, ctx.method, probability)

    def record_failure(self, ctx: CallContext, sent: int, err: grpc.aio.AioRpcError) -> None:
        """Counts a failed attempt that reached the wire (ctx.sent past `sent`), unless it ended
        for its caller's own deadline."""
        if ctx.sent > sent and not classify.callers_deadline(err, ctx.own_timeout):
            self.window.record(accepted=not is_overload_refusal(err))
