"""The errors our own strategies raise, each carrying the gRPC status it maps to.

Every error is a `grpc.aio.AioRpcError`, so callers handle wire failures and our own
rejections with one `except grpc.aio.AioRpcError as err: err.code()`, and the gateway maps
them to statuses (pushback trailers included) without special cases::

    grpc.aio.AioRpcError
    └── ResilienceError                    (never retried by our retry strategy)
        ├── BreakerOpenError               UNAVAILABLE, pushback = time until the next probe
        ├── BulkheadFullError              RESOURCE_EXHAUSTED (reject mode, or queue wait spent)
        ├── ClientThrottledError         RESOURCE_EXHAUSTED: the adaptive throttle rejected the
        │                                  attempt here, before it reached the backend
        ├── DeadlineBudgetExhaustedError   DEADLINE_EXCEEDED: no time left to start an attempt
        │                                  or a backoff sleep
        ├── StreamBrokenError              the wire's code: a committed stream failed after
        │                                  part of its answer (never retried, gRFC A6)
        ├── ShedError                      server side: RESOURCE_EXHAUSTED + pushback (+ the
        │                                  caller-deadline marker when its deadline was why)
        ├── PoolFullError                  server side: RESOURCE_EXHAUSTED, no pushback: the
        │                                  declared pool's queue is full
        └── InjectedFaultError             server side: the code a configured fault chose
"""

from __future__ import annotations

import grpc
import grpc.aio

from grpc_aio_resilience.fate_kinds import SHED_REASONS as SHED_REASONS
from grpc_aio_resilience.fate_kinds import ShedReason as ShedReason

PUSHBACK_KEY = "grpc-retry-pushback-ms"
CALLER_DEADLINE_KEY = "resilience-caller-deadline"
"""Trailer of a refusal the server made for the call's own deadline (its value: the reason,
`deadline` or `queue_timeout`); a caller trusts it only as grpc_aio_resilience.classify says."""


def _trailers(pushback_s: float | None, callers_deadline: str = "") -> grpc.aio.Metadata:
    trailers = grpc.aio.Metadata()
    if pushback_s is not None:
        trailers.add(PUSHBACK_KEY, str(max(round(pushback_s * 1000), 0)))
    if callers_deadline:
        trailers.add(CALLER_DEADLINE_KEY, callers_deadline)
    return trailers


class ResilienceError(grpc.aio.AioRpcError):  # type: ignore[misc]
    """Base of the errors raised by our strategies rather than received from the wire."""

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        pushback_s: float | None = None,
        callers_deadline: str = "",
    ):
        super().__init__(
            code,
            initial_metadata=grpc.aio.Metadata(),
            trailing_metadata=_trailers(pushback_s, callers_deadline),
            details=details,
        )
        self.pushback_s = pushback_s
        self.attempts_sent = 0
        """Attempts of this logical call that went on the wire before it was raised (set by
        the pipeline): with 0 the dependency never saw the call, so nothing happened there."""

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.code().name}: {self.details()})"


class BreakerOpenError(ResilienceError):
    """The breaker for this dependency (or method) is open; try again after the pushback."""

    def __init__(self, dependency: str, method: str, time_until_probe_s: float) -> None:
        super().__init__(
            grpc.StatusCode.UNAVAILABLE,
            f"circuit breaker open for {dependency} {method}; "
            f"next probe in {time_until_probe_s:.3f}s",
            pushback_s=max(time_until_probe_s, 0.001),  # 0 would read as "retry now"
        )
        self.time_until_probe_s = time_until_probe_s


class BulkheadFullError(ResilienceError):
    """The dependency's concurrency limit is reached (and the queue wait, if any, ran out)."""

    def __init__(self, dependency: str, limit: int) -> None:
        super().__init__(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"bulkhead full for {dependency}: {limit} calls in flight",
        )


class ClientThrottledError(ResilienceError):
    """The edge's adaptive throttle rejected the attempt locally: the backend has been refusing
    so much lately that this attempt would most likely have been refused too."""

    def __init__(self, dependency: str, method: str, probability: float) -> None:
        super().__init__(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"client throttle rejected {dependency} {method} locally "
            f"(rejecting {probability:.0%} of attempts: {dependency} refuses most of them)",
        )
        self.probability = probability


class DeadlineBudgetExhaustedError(ResilienceError):
    """Not enough time is left to start another attempt or backoff before the deadline."""

    def __init__(self, dependency: str, method: str, stage: str, last_code: str = "") -> None:
        after = f" after {last_code}" if last_code else ""
        super().__init__(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"deadline budget exhausted for {dependency} {method} before {stage}{after}",
        )
        self.stage = stage


class StreamBrokenError(ResilienceError):
    """A stream whose first message had arrived failed after `messages` messages: it is not
    retried (the caller already holds part of the answer). Its cause is the wire's error, so a
    breaker counts it as the health failure it was."""

    def __init__(self, err: grpc.aio.AioRpcError, messages: int) -> None:
        super().__init__(
            err.code(),
            f"stream failed after {messages} messages: {err.details() or err.code().name}",
        )
        self.messages = messages


class ShedError(ResilienceError):
    """The server refused the call because too many are in flight; retry after the pushback.
    `callers_deadline`: refused for the call's own deadline (unmeetable, or it ran out while
    the call queued), said in the CALLER_DEADLINE_KEY trailer."""

    def __init__(
        self,
        service: str,
        limit: int,
        pushback_s: float,
        kind: str = "call",
        reason: str = "limit",
        callers_deadline: bool = False,
    ) -> None:
        why = f"{limit} {kind}s in flight" if reason == "limit" else reason.replace("_", " ")
        super().__init__(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"{service} shed the {kind}: {why}",
            pushback_s=pushback_s,
            callers_deadline=reason if callers_deadline else "",
        )
        self.reason = reason


class PoolFullError(ResilienceError):
    """The declared worker pool's queue is full (`max_queue` waiting): refused at once, with no
    pushback, as a database at its connection limit answers (the mesh does not retry it)."""

    def __init__(self, service: str, max_queue: int) -> None:
        super().__init__(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"{service}'s worker pool is full ({max_queue} calls waiting)",
        )


class InjectedFaultError(ResilienceError):
    """A failure injected by the fault interceptor on purpose."""

    def __init__(self, method: str, code: grpc.StatusCode, pushback_s: float | None) -> None:
        super().__init__(code, f"injected fault on {method}", pushback_s=pushback_s)
