"""The one client interceptor that runs every call of a channel through its pipeline.

Over several replicas the channel's ReplicaRouter is no interceptor of its own: while it
routes, each attempt the pipeline makes goes to `router.send` (a stream's to
`router.open_stream`) in place of gRPC's continuation, so a call crosses this one layer.
"""

from __future__ import annotations

import math
from collections.abc import Coroutine
from typing import Any

import grpc.aio

from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.context import CallContext, Continuation, Start
from grpc_aio_resilience.deadline import inbound_deadline_var
from grpc_aio_resilience.outlier_router import ReplicaRouter
from grpc_aio_resilience.pipeline import Pipeline
from grpc_aio_resilience.streaming import ResilientStreamCall, StreamResilienceInterceptor


class ResilienceInterceptor(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Starts each call's deadline at min(caller's timeout, inbound deadline) and hands the call
    to the edge's pipeline; returns the final call object so trailers stay readable."""

    def __init__(self, pipeline: Pipeline, *, dependency: str, clock: Clock) -> None:
        self.pipeline = pipeline
        self._dependency = dependency
        self._clock = clock
        self._method_names: dict[bytes | str, str] = {}
        self.router: ReplicaRouter | None = None
        """The replica router of the channel built around this interceptor, if it is over
        several replicas (set by grpc_aio_resilience.channel); read at each call's start."""

    def streams(self) -> StreamResilienceInterceptor:
        """The interceptor that runs the channel's server-streaming calls through this same
        (swappable) pipeline, under the commit rule (grpc_aio_resilience.streaming)."""
        return RoutedStreamInterceptor(self, dependency=self._dependency, clock=self._clock)

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
        return await self.run(method, client_call_details, continuation, request)

    def run(
        self,
        method: str,
        client_call_details: grpc.aio.ClientCallDetails,
        continuation: Continuation,
        request: Any,
        start: Start | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """One call of `method` through the pipeline, each attempt sent by `continuation`
        (or the router's): a coroutine of the final call object. What the interceptor runs,
        and a ResilientChannel's calls (grpc_aio_resilience.direct) without it. `start`: what
        `continuation` awaits, when it is that alone (CallContext.start)."""
        deadline_s = math.inf
        timeout_s = client_call_details.timeout
        if timeout_s is not None:
            deadline_s = self._clock.now() + timeout_s
        inbound_s = inbound_deadline_var.get()
        if inbound_s is not None and inbound_s < deadline_s:
            deadline_s = inbound_s
        router = self.router
        pipeline = self.pipeline
        if router is not None and (router.routes or pipeline.hedges):
            continuation = router.send
            start = None
        ctx = CallContext(
            self._dependency,
            method,
            request,
            client_call_details,
            continuation,
            deadline_s,
            start=start,
        )
        return pipeline.run(ctx)


class RoutedStreamInterceptor(StreamResilienceInterceptor):
    """A ResilienceInterceptor's server-streaming side: while its channel's router routes,
    each attempt of a stream opens on the replica the router picks."""

    def __init__(self, unary: ResilienceInterceptor, *, dependency: str, clock: Clock) -> None:
        super().__init__(unary, dependency=dependency, clock=clock)
        self._routed_by = unary

    async def intercept_unary_stream(
        self,
        continuation: Continuation,
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> ResilientStreamCall:
        router = self._routed_by.router
        if router is not None and router.routes:
            continuation = router.open_stream
        return await super().intercept_unary_stream(continuation, client_call_details, request)
