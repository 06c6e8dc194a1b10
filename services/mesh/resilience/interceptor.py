"""The one client interceptor that runs every unary call of a channel through its pipeline."""

from __future__ import annotations

import math
from typing import Any

import grpc.aio

from mesh.resilience.clock import Clock
from mesh.resilience.context import CallContext, Continuation
from mesh.resilience.deadline import inbound_deadline
from mesh.resilience.pipeline import Pipeline
from mesh.resilience.streaming import StreamResilienceInterceptor


class ResilienceInterceptor(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Starts each call's deadline at min(caller's timeout, inbound deadline) and hands the call
    to the edge's pipeline; returns the final call object so trailers stay readable."""

    def __init__(self, pipeline: Pipeline, *, dependency: str, clock: Clock) -> None:
        self.pipeline = pipeline
        self._dependency = dependency
        self._clock = clock
        self._method_names: dict[bytes | str, str] = {}

    def streams(self) -> StreamResilienceInterceptor:
        """The interceptor that runs the channel's server-streaming calls through this same
        (swappable) pipeline, under the commit rule (mesh.resilience.streaming)."""
        return StreamResilienceInterceptor(self, dependency=self._dependency, clock=self._clock)

    async def intercept_unary_unary(
        self,
        continuation: Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        raw_method = client_call_details.method
        method = self._method_names.get(raw_method)
        if method is None:
            method = raw_method.decode() if isinstance(raw_method, bytes) else str(raw_method)
            self._method_names[raw_method] = method
        deadline_s = math.inf
        timeout_s = client_call_details.timeout
        if timeout_s is not None:
            deadline_s = self._clock.now() + timeout_s
        inbound_s = inbound_deadline()
        if inbound_s is not None and inbound_s < deadline_s:
            deadline_s = inbound_s
        ctx = CallContext(
            self._dependency, method, request, client_call_details, continuation, deadline_s
        )
        return await self.pipeline.run(ctx)
