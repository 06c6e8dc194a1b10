"""Per-key rate limit at the gateway: a token bucket per API key.

A call that finds its key's bucket empty fails at once with RESOURCE_EXHAUSTED and
`grpc-retry-pushback-ms` = the time until the bucket holds a token again (at least 1 ms: a
pushback of 0 is read as "retry now" and hung calls in grpc's own retry). The defaults are
generous (2000 calls/s, burst 4000) so chaos experiments measure the mesh, not this limit.
Buckets are keyed by the configured key the call authenticated with, so their number is
bounded by the number of keys; with MESH_AUTH=off every caller shares one bucket.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import grpc
import grpc.aio

from grpc_aio_resilience import PUSHBACK_KEY, Clock, ServerLayer, SystemClock
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.exempt import is_exempt
from grpc_resilience_mesh.services.gateway.auth import ApiKeys
from grpc_resilience_mesh.services.runtime.bearer import bearer_token, rejection


@dataclass(frozen=True)
class RateLimitPolicy:
    """How fast one key may call."""

    rate_per_s: float
    """MESH_RATE_LIMIT_RPS: tokens added per second per key. Default 2000; 0 turns it off."""
    burst: float
    """MESH_RATE_LIMIT_BURST: bucket size, calls a key may make at once. Default 4000."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RateLimitPolicy:
        return cls(rate_per_s=RATE_PER_S.read(environ), burst=BURST.read(environ))


RATE_PER_S = settings.Var(
    "MESH_RATE_LIMIT_RPS",
    settings.number_in(0),
    2000.0,
    "calls per second per API key at the gateway; 0 turns it off",
)
BURST = settings.Var(
    "MESH_RATE_LIMIT_BURST", settings.number_in(0), 4000.0, "calls one API key may make at once"
)


class TokenBucket:
    """`burst` tokens, refilled at `rate_per_s`; `take()` answers 0.0 or the wait for one."""

    def __init__(self, rate_per_s: float, burst: float, clock: Clock) -> None:
        self._rate = rate_per_s
        self._burst = max(burst, 1.0)
        self._clock = clock
        self._tokens = self._burst
        self._at = clock.now()

    def take(self) -> float:
        """Take one token: 0.0 if granted, else seconds until one will be there."""
        now = self._clock.now()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self._rate


class RateLimitInterceptor(ServerLayer):
    """Mounted after AuthInterceptor: each call reaching it has a valid key (or auth is off).
    Inside the call counting, so a refusal here is counted like any other answer."""

    def __init__(self, policy: RateLimitPolicy, keys: ApiKeys, clock: Clock | None = None) -> None:
        self._policy = policy
        self._keys = keys
        self._clock = clock or SystemClock()
        self._buckets: dict[bytes, TokenBucket] = {}

    def _bucket(self, handler_call_details: grpc.HandlerCallDetails) -> TokenBucket:
        principal = b""
        if self._keys.enabled:
            presented = bearer_token(handler_call_details.invocation_metadata) or b""
            principal = self._keys.match(presented) or b""
        bucket = self._buckets.get(principal)
        if bucket is None:
            bucket = TokenBucket(self._policy.rate_per_s, self._policy.burst, self._clock)
            self._buckets[principal] = bucket
        return bucket

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        if handler is None or not self._policy.rate_per_s:
            return handler  # an unknown method stays UNIMPLEMENTED, uncounted: no label for it
        if is_exempt(handler_call_details.method):
            return handler
        wait_s = self._bucket(handler_call_details).take()
        if wait_s > 0:
            pushback_ms = max(1, math.ceil(wait_s * 1000))
            return rejection(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"rate limit: {self._policy.rate_per_s:g} calls/s per API key "
                f"(burst {self._policy.burst:g}); retry in {pushback_ms} ms",
                ((PUSHBACK_KEY, str(pushback_ms)),),
                shed_by="rate-limit",
            )
        return handler
