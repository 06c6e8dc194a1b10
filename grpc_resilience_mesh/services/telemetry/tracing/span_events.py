"""The tracing listener: resilience events become events on the span that is current.

Strategies emit synchronously inside the call they act on, so the span of the call whose
pipeline is running is the right one: retry, deadline, breaker and bulkhead events land on the
logical call's `Sent.` span (a throttle's local rejection too: that attempt never had one of
its own); outside a pipeline, the current span takes them: shedding, faults
and fallbacks land on the service's `Recv.` span. (Pushback is recorded by the
attempt span itself, which sees the trailers.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace

import grpc_aio_resilience as ev
from grpc_resilience_mesh.services.telemetry import names as n
from grpc_resilience_mesh.services.telemetry.tracing.spans import (
    current_call_span,
    current_server_span,
)


def _retry(span: trace.Span, e: ev.RetryScheduled) -> None:
    attrs: dict[str, Any] = {n.ATTEMPT: e.attempt, n.REASON: e.reason, n.DELAY_S: e.delay_s}
    if e.pushback_s is not None:
        attrs[n.PUSHBACK_S] = e.pushback_s
    span.add_event(n.EV_RETRY_SCHEDULED, attrs)


def _retry_skipped(span: trace.Span, e: ev.RetrySkipped) -> None:
    span.add_event(n.EV_RETRY_SKIPPED, {n.ATTEMPT: e.attempt, n.REASON: e.reason, n.CODE: e.code})


def _deadline(span: trace.Span, e: ev.DeadlineExhausted) -> None:
    span.add_event(n.EV_DEADLINE_EXHAUSTED, {n.ATTEMPT: e.attempt, n.STAGE: e.stage})


def _breaker_moved(span: trace.Span, e: ev.BreakerStateChanged) -> None:
    span.add_event(
        n.EV_BREAKER[int(e.to_state)],
        {
            n.DEPENDENCY: e.dependency,
            n.BREAKER_SCOPE: e.method,
            n.FROM_STATE: e.from_state.name.lower(),
            n.TIME_UNTIL_PROBE_S: e.time_until_probe_s,
        },
    )


def _breaker_rejected(span: trace.Span, e: ev.BreakerRejected) -> None:
    span.add_event(
        n.EV_BREAKER_REJECTED,
        {
            n.DEPENDENCY: e.dependency,
            n.BREAKER_SCOPE: e.method,
            n.BREAKER_STATE: e.state.name.lower(),
            n.TIME_UNTIL_PROBE_S: e.time_until_probe_s,
        },
    )


def _bulkhead(span: trace.Span, e: ev.BulkheadRejected) -> None:
    span.add_event(
        n.EV_BULKHEAD_REJECTED,
        {
            n.DEPENDENCY: e.dependency,
            n.LIMIT: e.limit,
            n.WAITED_S: e.waited_s,
        },
    )


def _throttled(span: trace.Span, e: ev.ClientThrottled) -> None:
    span.add_event(
        n.EV_CLIENT_THROTTLED,
        {
            n.ATTEMPT: e.attempt,
            n.PROBABILITY: e.probability,
            n.REQUESTS: e.requests,
            n.ACCEPTS: e.accepts,
        },
    )


def _fallback(span: trace.Span, e: ev.FallbackServed) -> None:
    span.add_event(
        n.EV_FALLBACK,
        {
            n.DEPENDENCY: e.dependency,
            n.METHOD: e.method,
            n.SERVED_BY: e.served_by,
            n.CODE: e.code,
            n.REASON: e.reason,
        },
    )
    server = current_server_span.get() or span
    if not server.is_recording():
        return
    known = getattr(server, "attributes", None) or {}
    parts = tuple(known.get(n.DEGRADED_PARTS, ()))
    if e.dependency not in parts:
        parts = (*parts, e.dependency)
    server.set_attributes({n.DEGRADED: True, n.DEGRADED_PARTS: parts})


def _shed(span: trace.Span, e: ev.CallShed) -> None:
    span.add_event(
        n.EV_SHED,
        {
            n.IN_FLIGHT: e.in_flight,
            n.PUSHBACK_S: e.pushback_s,
            n.REASON: e.reason,
            n.LIMIT: e.limit,
            n.CRITICALITY: e.criticality,
            n.WAITED_S: e.waited_s,
            n.DEADLINE_LEFT_S: e.deadline_left_s,
            n.EXPECTED_S: e.expected_s,
        },
    )


def _pool(span: trace.Span, e: ev.PoolWorkDone) -> None:
    span.add_event(n.EV_POOL_WORK, {n.WAITED_S: e.waited_s, n.SERVICE_S: e.service_s})


def _fault(span: trace.Span, e: ev.FaultInjected) -> None:
    span.add_event(n.EV_FAULT, {n.CODE: e.code, n.DELAY_S: e.delay_s})


def _ejected(span: trace.Span, e: ev.ReplicaEjected) -> None:
    span.add_event(
        n.EV_REPLICA_EJECTED,
        {
            n.DEPENDENCY: e.dependency,
            "mesh.replica": e.replica,
            n.REASON: e.reason,
            "mesh.ejection_s": e.ejection_s,
            "mesh.ejections": e.ejections,
        },
    )


def _returned(span: trace.Span, e: ev.ReplicaReturned) -> None:
    span.add_event(
        n.EV_REPLICA_RETURNED,
        {n.DEPENDENCY: e.dependency, "mesh.replica": e.replica, "mesh.ejected_s": e.ejected_s},
    )


def _stream_committed(span: trace.Span, e: ev.StreamCommitted) -> None:
    span.add_event(
        n.EV_STREAM_COMMITTED, {n.ATTEMPT: e.attempt, n.PREVIOUS_ATTEMPTS: e.attempt - 1}
    )


def _stream_ended(span: trace.Span, e: ev.StreamEnded) -> None:
    span.add_event(
        n.EV_STREAM_ENDED,
        {n.STREAM_OUTCOME: e.outcome, n.MESSAGES: e.messages, n.CODE: e.code, n.ATTEMPT: e.attempt},
    )


_HANDLERS: dict[type, Callable[[trace.Span, Any], None]] = {
    ev.RetryScheduled: _retry,
    ev.RetrySkipped: _retry_skipped,
    ev.DeadlineExhausted: _deadline,
    ev.BreakerStateChanged: _breaker_moved,
    ev.BreakerRejected: _breaker_rejected,
    ev.BulkheadRejected: _bulkhead,
    ev.ClientThrottled: _throttled,
    ev.FallbackServed: _fallback,
    ev.CallShed: _shed,
    ev.PoolWorkDone: _pool,
    ev.FaultInjected: _fault,
    ev.ReplicaEjected: _ejected,
    ev.ReplicaReturned: _returned,
    ev.StreamCommitted: _stream_committed,
    ev.StreamEnded: _stream_ended,
}


def tracing_listener(event: ev.Event) -> None:
    """Subscribe to a service's EventBus; events with no recording span are ignored."""
    handler = _HANDLERS.get(type(event))
    if handler is None:
        return
    span = current_call_span() or trace.get_current_span()
    if span.is_recording():
        handler(span, event)
