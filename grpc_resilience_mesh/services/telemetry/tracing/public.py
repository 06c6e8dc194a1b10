"""The public port's server spans: each call starts a trace of the mesh's own.

A client's `traceparent` chooses the trace id and the sampled flag of every span its call
causes, in every service it reaches, when the gateway continues it (the default, which the load
generator, `mesh call` and the reports rely on to find a request's spans by the id they sent).
With `MESH_PUBLIC_TRACEPARENT=link` the gateway's SERVER span is instead the root of a new trace,
sampled by the mesh's own sampler, and the client's context is kept beside it: the trace id as
`mesh.client_trace_id` (in every exporter's output, JSON lines included) and a span link (where
the span records links: the SDK's, for OTLP). Only a canonical version-00 header is kept; the
client's `tracestate` and `baggage` go no further.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
import grpc.aio
from opentelemetry import trace

from grpc_aio_resilience import Behaviour, StreamBehaviour, WrappedHandlers, responses
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.exempt import is_exempt
from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing.spans import (
    SpanFactory,
    TracingServerInterceptor,
    current_server_span,
)
from grpc_resilience_mesh.services.telemetry.tracing.traceparent import parse_ids

PUBLIC_TRACEPARENT = settings.Var(
    "MESH_PUBLIC_TRACEPARENT",
    settings.lower_choice("continue", "link"),
    "continue",
    "the gateway: continue a public client's traceparent, or link: start a trace of its own "
    "per call and keep the client's trace id as mesh.client_trace_id",
)

_client: contextvars.ContextVar[tuple[int, int, int] | None] = contextvars.ContextVar(
    "mesh_client_trace", default=None
)
"""The ids of the traceparent the public client sent with the call being set up."""


def _keep_client_context() -> None:
    """Puts the client's ids on the current SERVER span, which the layer outside just started."""
    ids = _client.get()
    span = current_server_span.get()
    if ids is None or span is None or not span.is_recording():
        return
    trace_id, span_id, flags = ids
    span.set_attribute(n.CLIENT_TRACE_ID, f"{trace_id:032x}")
    span.add_link(trace.SpanContext(trace_id, span_id, True, trace.TraceFlags(flags)))


def _marking(inner: Behaviour) -> Behaviour:
    async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
        _keep_client_context()
        return await inner(request, context)

    return behaviour


def _marking_stream(inner: StreamBehaviour) -> StreamBehaviour:
    async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        _keep_client_context()
        async with contextlib.aclosing(responses(inner, request, context)) as messages:
            async for message in messages:
                yield message

    return behaviour


class PublicTracingInterceptor(TracingServerInterceptor):
    """A SERVER span per call that starts a new trace, keeping the client's context beside it."""

    def __init__(self, factory: SpanFactory) -> None:
        super().__init__(factory)
        self._marked = WrappedHandlers()

    def trace_headers(self, metadata: Sequence[tuple[str, Any]]) -> dict[str, str]:
        sent = next((v for k, v in metadata if k == "traceparent"), None)
        _client.set(parse_ids(sent) if isinstance(sent, str) else None)
        return {}

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if handler is not None and not is_exempt(method):
            inner = handler
            if inner.unary_stream is not None:
                stream = inner.unary_stream
                handler = self._marked.wrap(
                    method, inner, lambda: inner._replace(unary_stream=_marking_stream(stream))
                )
            elif inner.unary_unary is not None:
                unary = inner.unary_unary
                handler = self._marked.wrap(
                    method, inner, lambda: inner._replace(unary_unary=_marking(unary))
                )
        return super().wrap(handler, handler_call_details)
