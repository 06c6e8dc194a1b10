"""The spans of one RPC, shaped after gRFC A72, with W3C trace context in gRPC metadata.

    Recv.<svc>.<Method>        SERVER   one per call received (continues an incoming traceparent)
    └── Sent.<svc>.<Method>    INTERNAL one per logical outbound call (all its attempts)
        └── Attempt.<...>      CLIENT   one per attempt; its traceparent goes on the wire

Spans are made through `SpanFactory.recorder` (seam.py), which never says which recorder it is
(the SDK's, or the light one that keeps tracing cheap). Everything here is on the hot path:
names and constant attributes are computed once per method, and attribute work is skipped for
spans the sampler dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc
import grpc.aio
from opentelemetry import baggage, propagate, trace
from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Setter, TextMapPropagator
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from grpc_aio_resilience import (
    Behaviour,
    CallContext,
    ServerLayer,
    StreamBehaviour,
    StreamStatus,
    WrappedHandlers,
    inbound_deadline,
    served_code,
    tracked,
)
from grpc_aio_resilience import (
    pushback_s as pushback_in,
)
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.exempt import is_exempt
from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing.choice import recorder_for
from grpc_resilience_mesh.services.telemetry.tracing.seam import SpanRecorder

PROPAGATORS = settings.Var(
    "OTEL_PROPAGATORS",
    settings.text,
    "tracecontext,baggage",
    "the propagators (OTel's); with the default, attempts write traceparent directly",
)

current_server_span: contextvars.ContextVar[trace.Span | None] = contextvars.ContextVar(
    "mesh_server_span", default=None
)
"""The SERVER span of the call being handled (listeners mark it degraded)."""

SERVER_ERRORS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""Codes that make a server span an error (OTel RPC conventions); on the client any non-OK."""


@dataclass(frozen=True, slots=True)
class MethodNames:
    """Span names and constant attributes of one full method name, e.g. /mesh.v1.X/Get."""

    server: str
    call: str
    attempt: str
    attributes: Mapping[str, AttributeValue]
    server_attributes: Mapping[str, AttributeValue]
    """A server span's attributes at start: the constant ones and status code 0 (OK)."""

    @classmethod
    def of(cls, method: str) -> MethodNames:
        service, _, name = method.lstrip("/").partition("/")
        dotted = f"{service}.{name}"
        attributes = {n.RPC_SYSTEM: "grpc", n.RPC_SERVICE: service, n.RPC_METHOD: name}
        server = {**attributes, n.GRPC_STATUS_CODE: grpc.StatusCode.OK.value[0]}
        return cls(f"Recv.{dotted}", f"Sent.{dotted}", f"Attempt.{dotted}", attributes, server)


class SpanFactory:
    """Holds the recorder and propagator of one service and the per-method names cache."""

    def __init__(
        self,
        tracer: Tracer,
        propagator: TextMapPropagator | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.propagator = propagator or propagate.get_global_textmap()
        self.carrier_keys = frozenset(self.propagator.fields)
        self.w3c_only = propagator is None and PROPAGATORS.read(environ).replace(" ", "") in (
            "tracecontext,baggage",
            "tracecontext",
        )
        """True with the default propagators: attempts then write traceparent directly."""
        self.recorder: SpanRecorder = recorder_for(tracer, self.propagator, self.w3c_only)
        self._names: dict[str, MethodNames] = {}

    def names(self, method: str) -> MethodNames:
        found = self._names.get(method)
        if found is None:
            found = self._names[method] = MethodNames.of(method)
        return found

    def call_observer(self, ctx: CallContext) -> CallSpan:
        return CallSpan(self, ctx)

    def attempt_observer(self, ctx: CallContext) -> AttemptSpan:
        return AttemptSpan(self, ctx)


def _client_code(exc: BaseException | None) -> grpc.StatusCode:
    if exc is None:
        return grpc.StatusCode.OK
    if isinstance(exc, grpc.aio.AioRpcError):
        code: grpc.StatusCode = exc.code()
        return code
    if isinstance(exc, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN


def _end_client_span(span: trace.Span, exc: BaseException | None, extra: dict[str, Any]) -> None:
    code = _client_code(exc)
    extra[n.GRPC_STATUS_CODE] = code.value[0]
    if isinstance(exc, grpc.aio.AioRpcError):
        extra[n.ERROR_TYPE] = type(exc).__name__
        span.set_status(Status(StatusCode.ERROR, f"{code.name}: {exc.details() or ''}"))
    elif exc is not None:
        span.set_status(Status(StatusCode.ERROR, code.name))
    span.set_attributes(extra)


_current_call: contextvars.ContextVar[CallSpan | None] = contextvars.ContextVar(
    "mesh_call_span", default=None
)
"""The logical call whose pipeline is running: its attempts are its children, strategy events
land on its span, and its first attempt notes the call's budget. (Not made the OpenTelemetry
context's current span: nothing else in the pipeline reads that, and attaching costs more.)"""


def current_call_span() -> trace.Span | None:
    """The `Sent.` span of the logical call whose pipeline is running, if any."""
    call = _current_call.get()
    return None if call is None else call._span


class CallSpan:
    """The logical call: the call whose pipeline runs, so strategy events land on its span."""

    __slots__ = ("_call_token", "_ctx", "_factory", "_span", "budget_s")

    def __init__(self, factory: SpanFactory, ctx: CallContext) -> None:
        self._factory = factory
        self._ctx = ctx
        self.budget_s: float | None = None
        """Set by the first attempt; written with the span's other end attributes."""

    def __enter__(self) -> trace.Span:
        ctx = self._ctx
        names = self._factory.names(ctx.method)
        span = self._factory.recorder.start(
            names.call, SpanKind.INTERNAL, {n.DEPENDENCY: ctx.dependency}
        )
        self._span = span
        self._call_token = _current_call.set(self)
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _current_call.reset(self._call_token)
        span = self._span
        if span.is_recording():
            extra: dict[str, Any] = {n.ATTEMPTS_SENT: self._ctx.sent}
            if self.budget_s is not None:
                extra[n.CALL_BUDGET_S] = self.budget_s
            _end_client_span(span, exc, extra)
        span.end()
        self._ctx = self._call_token = None  # type: ignore[assignment]


class AttemptSpan:
    """One attempt: a CLIENT span whose context goes on the wire as `traceparent`."""

    __slots__ = ("_ctx", "_factory", "_span")

    def __init__(self, factory: SpanFactory, ctx: CallContext) -> None:
        self._factory = factory
        self._ctx = ctx

    def __enter__(self) -> trace.Span:
        ctx = self._ctx
        factory = self._factory
        names = factory.names(ctx.method)
        attributes = {
            **names.attributes,
            n.ATTEMPT: ctx.attempt,
            n.PREVIOUS_ATTEMPTS: ctx.attempt - 1,
            n.GRPC_STATUS_CODE: 0,  # OK; an attempt that fails overwrites it at its end
        }
        if ctx.attempt_timeout_s != float("inf"):
            attributes[n.ATTEMPT_TIMEOUT_S] = ctx.attempt_timeout_s
        if ctx.criticality is not None:
            attributes[n.CRITICALITY] = ctx.criticality.name
        call = _current_call.get()
        if call is None:  # an attempt observed without its call: the current span's child
            span = factory.recorder.start(names.attempt, SpanKind.CLIENT, attributes)
        else:
            if ctx.attempt == 1:
                _note_call_deadline(ctx, call)
            span = factory.recorder.start_child(
                names.attempt, SpanKind.CLIENT, call._span, attributes
            )
        self._span = span
        metadata = ctx.attempt_metadata
        if metadata is not None:
            if factory.w3c_only and not baggage.get_all():
                # The default propagators' result, without their per-call machinery.
                ids = factory.recorder.wire_ids(span)
                metadata.set_all("traceparent", [f"00-{ids[0]:032x}-{ids[1]:016x}-{ids[2]:02x}"])
                if ids[3]:
                    metadata.set_all("tracestate", [ids[3].to_header()])
            else:
                factory.propagator.inject(metadata, trace.set_span_in_context(span), _set_metadata)
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        span = self._span
        if exc is not None and span.is_recording():
            if isinstance(exc, grpc.aio.AioRpcError):
                pushback_s = pushback_in(exc.trailing_metadata())
                if pushback_s is not None:
                    span.add_event(n.EV_PUSHBACK, {n.PUSHBACK_S: pushback_s})
            _end_client_span(span, exc, {})
        span.end()


def _note_call_deadline(ctx: CallContext, call: CallSpan) -> None:
    """On the call span: the budget the call got (written at its end, with its other late
    attributes: one locked update instead of two), and whether the inbound deadline cut it."""
    if ctx.deadline_s == float("inf") or not call._span.is_recording():
        return
    left_s = ctx.deadline_s - time.monotonic()
    call.budget_s = left_s
    inbound = inbound_deadline()
    if inbound is not None and inbound == ctx.deadline_s:
        attrs: dict[str, AttributeValue] = {n.DEADLINE_LEFT_S: left_s}
        if ctx.details.timeout is not None:
            attrs[n.CALLER_TIMEOUT_S] = ctx.details.timeout
        call._span.add_event(n.EV_DEADLINE_CLAMPED, attrs)


class _MetadataSetter(Setter[grpc.aio.Metadata]):
    """TextMap setter over grpc.aio.Metadata: replaces any value the caller copied in."""

    def set(self, carrier: grpc.aio.Metadata, key: str, value: str) -> None:
        carrier.set_all(key, [value])


_set_metadata = _MetadataSetter()


_carrier: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("mesh_trace_carrier")
"""The trace headers of the call whose handler grpc.aio just asked for: set by the tracing
interceptor, read by its behaviour, which grpc.aio runs next in the same task. The behaviour is
then made once per method, not once per call."""
_NO_CARRIER: dict[str, str] = {}


class TracingServerInterceptor(ServerLayer):
    """Outermost on the server: a SERVER span per unary call, current for the handler (so
    client spans, strategy events and log lines nest under it); health, reflection and the
    fault admin are not traced."""

    def __init__(self, factory: SpanFactory) -> None:
        self._factory = factory
        self._wrapped = WrappedHandlers()

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if handler is None or is_exempt(method):
            return handler
        if handler.unary_unary is None and handler.unary_stream is None:
            return handler
        _carrier.set(self.trace_headers(handler_call_details.invocation_metadata or ()))
        if handler.unary_stream is not None:
            stream = handler.unary_stream
            return self._wrapped.wrap(
                method,
                handler,
                lambda: handler._replace(unary_stream=self._wrap_stream(stream, method)),
            )
        unary = handler.unary_unary
        return self._wrapped.wrap(
            method, handler, lambda: handler._replace(unary_unary=self._wrap(unary, method))
        )

    def trace_headers(self, metadata: Sequence[tuple[str, Any]]) -> dict[str, str]:
        """The trace headers of a call's metadata that its SERVER span continues."""
        keys = self._factory.carrier_keys
        return {k: v for k, v in metadata if k in keys}

    def _wrap(self, inner: Behaviour, method: str) -> Behaviour:
        factory = self._factory
        names = factory.names(method)

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            span, token, server_token = start_server_span(factory, names, _carrier.get(_NO_CARRIER))
            failure: BaseException | None = None
            try:
                return await inner(request, context)
            except BaseException as err:
                failure = err
                raise
            finally:
                current_server_span.reset(server_token)
                otel_context.detach(token)
                code = served_code(failure, context)
                failure = None  # the exception's traceback holds this frame: no cycle
                end_server_span(span, code)

        return behaviour

    def _wrap_stream(self, inner: StreamBehaviour, method: str) -> StreamBehaviour:
        """A stream's span is current while it produces its messages, and ends with its final
        status and how many it sent (`mesh.messages`)."""
        factory = self._factory
        names = factory.names(method)

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            span, token, server_token = start_server_span(factory, names, _carrier.get(_NO_CARRIER))
            status = StreamStatus()
            try:
                async with contextlib.aclosing(
                    tracked(inner, request, context, status)
                ) as messages:
                    async for message in messages:
                        yield message
            finally:
                with contextlib.suppress(ValueError):  # finalised late, in another context
                    current_server_span.reset(server_token)
                otel_context.detach(token)
                if span.is_recording():
                    span.set_attribute(n.MESSAGES, status.sent)
                end_server_span(span, status.code)

        return behaviour


def start_server_span(
    factory: SpanFactory, names: MethodNames, carrier: dict[str, str]
) -> tuple[trace.Span, contextvars.Token[Context], contextvars.Token[trace.Span | None]]:
    """A call's SERVER span, made current: (span, context token, current_server_span token)."""
    span, context = factory.recorder.start_server(names.server, carrier, names.server_attributes)
    return span, otel_context.attach(context), current_server_span.set(span)


def end_server_span(span: trace.Span, code: grpc.StatusCode) -> None:
    if code is not grpc.StatusCode.OK and span.is_recording():
        # OK (0) was set at start: only another code costs a late attribute.
        span.set_attribute(n.GRPC_STATUS_CODE, code.value[0])
        if code in SERVER_ERRORS:
            span.set_status(Status(StatusCode.ERROR, code.name))
    span.end()
