"""Which failures are transient, which speak about a dependency's health, and server pushback.

A failure the caller's own deadline caused says nothing about the dependency's health
(`callers_deadline`): the breaker, the client throttle, the retry budget and outlier ejection
all leave it out, so one caller's too-short deadlines cannot shut a dependency off for every
other caller of the edge. It is recognised only when the attempt ran on the call's deadline,
not the edge's own attempt timeout (`own_timeout` False: less time than the edge allows the
dependency), and then ended with DEADLINE_EXCEEDED or with the server's word that the deadline
was why (CALLER_DEADLINE_KEY: refused as unmeetable, or expired while queued). The marker is
trusted from our own servers only in that case: on an attempt that had the edge's whole
attempt timeout, a server refusing it as unmeetable is a dependency too slow for the edge, a
health failure whatever its trailers say, so a caller cannot hide a sick dependency behind it.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
import grpc.aio

from grpc_aio_resilience.errors import CALLER_DEADLINE_KEY, PUSHBACK_KEY

NO_RETRY = -1.0
"""`pushback_s` value for a negative or unparsable hint: the server asked us not to retry."""

HEALTH_FAILURES: frozenset[grpc.StatusCode] = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""Codes that say the dependency is unwell; the breaker counts only these (CANCELLED is the
caller's own doing, INVALID_ARGUMENT and friends are the caller's fault)."""


RETRYABLE_CODES: frozenset[grpc.StatusCode] = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}
)
"""The codes a caller may try again: the mesh's one definition. UNAVAILABLE always;
RESOURCE_EXHAUSTED only when the server's pushback allows it (present and >= 0, see
`is_transient`). A hop that already retried marks these with pushback -1 (`mesh.runtime.relay`),
and the load generator counts them as retryable unless so marked. DEADLINE_EXCEEDED is
retried only as an attempt's own timeout, which a caller cannot tell from the wire."""


def pushback_s(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> float | None:
    """The server's `grpc-retry-pushback-ms` hint in seconds; None if absent, NO_RETRY if < 0."""
    if not trailing_metadata:
        return None
    for key, value in trailing_metadata:
        if key == PUSHBACK_KEY:
            try:
                ms = int(value)
            except (TypeError, ValueError):
                return NO_RETRY
            return NO_RETRY if ms < 0 else ms / 1000.0
    return None


def is_transient(code: grpc.StatusCode, pushback: float | None, own_timeout: bool) -> bool:
    """Worth another attempt: UNAVAILABLE, the attempt's own timeout, or an allowed
    RESOURCE_EXHAUSTED (one that came with a pushback >= 0)."""
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return own_timeout
    if code not in RETRYABLE_CODES:
        return False
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return pushback is not None and pushback >= 0
    return True


def counts_against_health(code: grpc.StatusCode, own_timeout: bool) -> bool:
    """A breaker failure: a health code, except a deadline that was not the attempt's own."""
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return own_timeout
    return code in HEALTH_FAILURES


def callers_deadline(err: grpc.aio.AioRpcError, own_timeout: bool) -> bool:
    """The attempt ended for its caller's own deadline, not the dependency's health (see the
    module docstring): only when it ran on less than the edge's attempt timeout."""
    if own_timeout:
        return False
    if err.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
        return True
    trailers = err.trailing_metadata()
    return bool(trailers) and any(key == CALLER_DEADLINE_KEY for key, _ in trailers)
