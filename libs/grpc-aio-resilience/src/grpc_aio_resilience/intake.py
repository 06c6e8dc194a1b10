"""The wait in front of a server's admission, and CoDel's rule on it (`intake:` policy).

grpc core starts a call's deadline when the call arrives; grpc.aio takes calls from core one
at a time on the event loop, so under overload a call may spend most of its deadline in
core's queue before any interceptor sees it, and a concurrency limit inside the process
cannot bound that. A caller that sends its deadline beside grpc-timeout, as `resilience-timeout-ms`
(Envoy sends x-envoy-expected-rq-timeout-ms for the same reason), lets the server measure it:
the deadline sent less the deadline left at admission. No clocks are compared, so it holds
across machines. The measure includes the hop itself and any wait in the caller's transport:
all of it time in front of the server that an answer cannot win back.

CoDel ("Fail at Scale"; Nichols and Jacobson's interval and target): a call that waited more
than N is refused; once every call for the last N has waited more than M (a standing queue,
not a burst), a call that waited more than M is refused. Refusing the late ones while they
are still cheap lets the server catch up with its queue instead of serving it late.
"""

from __future__ import annotations

from collections.abc import Iterable

from grpc_aio_resilience.admission_policy import IntakePolicy
from grpc_aio_resilience.clock import Clock

TIMEOUT_KEY = "resilience-timeout-ms"
"""Metadata: the caller's deadline for this call as it sent it, in milliseconds."""


def timeout_value(timeout_s: float) -> str:
    """The `resilience-timeout-ms` value for a call sent with `timeout_s`."""
    return str(round(timeout_s * 1000))


def sent_timeout_s(metadata: Iterable[tuple[str, str | bytes]] | None) -> float | None:
    """The deadline the caller sent (`resilience-timeout-ms`), if it sent one that parses."""
    for key, value in metadata or ():
        if key == TIMEOUT_KEY:
            text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
            try:
                ms = float(text)
            except ValueError:
                return None
            return ms / 1000.0 if 0 < ms < float("inf") else None
    return None


def waited_s(sent_s: float | None, remaining_s: float | None) -> float | None:
    """The time between the caller sending a call and its admission (None: not known)."""
    if sent_s is None or remaining_s is None:
        return None
    return max(sent_s - remaining_s, 0.0)


class IntakeGate:
    """CoDel on the waits calls report at admission; see the module docstring."""

    def __init__(self, policy: IntakePolicy, clock: Clock) -> None:
        self._clock = clock
        self._above_since_s: float | None = None
        self.policy = policy

    @property
    def enabled(self) -> bool:
        return self.policy.discipline != "none"

    def standing(self) -> bool:
        """Whether every call for the last `codel_interval_s` waited more than M."""
        since = self._above_since_s
        return since is not None and self._clock.now() - since >= self.policy.codel_interval_s

    def refuses(self, wait_s: float) -> bool:
        """Whether a call that waited `wait_s` is refused (and notes the wait)."""
        p = self.policy
        if wait_s <= p.codel_target_s:
            self._above_since_s = None
            return False
        if self._above_since_s is None:
            self._above_since_s = self._clock.now()
        limit_s = p.codel_target_s if self.standing() else p.codel_interval_s
        return wait_s > limit_s
