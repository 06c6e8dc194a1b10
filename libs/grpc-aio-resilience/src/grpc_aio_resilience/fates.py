"""Every request's fate: the one word (and its detail) that says how a call received ended.

    ok                              answered, first try, whole
    ok-after-retry(N)               answered after N retries of its dependencies' calls
    ok-degraded(DEP:SERVED_BY)      answered, a part from a fallback (recommendation:popular,
                                    payment:pending)
    failed-not-retryable(CODE)      failed with a code no one here retries (or retries are off)
    failed-deadline                 the deadline ran out (ours, or the dependency's attempt)
    failed-retry-skipped(WHY)       a retry was due and not made: budget, breaker-open,
                                    pushback (the dependency said "do not"), pushback-past-
                                    deadline (its pushback outlived the deadline), attempts
    shed(SERVICE:LIMIT)             refused by a service's admission (limit, queue_full,
                                    queue_timeout, deadline, criticality, intake, rate-limit)
                                    or by our own bulkhead to a dependency (bulkhead-DEP)
    client-throttled(DEP)           our adaptive throttle refused the call to DEP locally
                                    (client-throttled(loadgen): the load generator found no
                                    free slot and never sent it, CLIENT_DROPPED)

The facts come from the resilience events of the call's own context (`listen`, subscribed
to the service's bus), from the servicer (`note_cause`, `note_degraded`, `note_shed`) and
from a dependency's own fate in its trailers (`FATE_KEY`): a call shed by profile is
`shed(profile:limit)` at the gateway too. `fate_of` turns the facts and the final status into
the fate; the server's fate layer (mesh.telemetry.fate_layer) puts it on the span, in the
trailers and in `mesh_request_fates_total`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence

import grpc
import grpc.aio

from grpc_aio_resilience import classify
from grpc_aio_resilience import events as ev
from grpc_aio_resilience.errors import (
    BreakerOpenError,
    BulkheadFullError,
    ClientThrottledError,
    DeadlineBudgetExhaustedError,
)
from grpc_aio_resilience.fate_kinds import KINDS as KINDS

FATE_KEY = "resilience-fate"
"""The trailing metadata key a service's answer carries its fate in; a plain `ok` is sent as
none (an OK status without one reads `ok`: `seen_by_caller`)."""


class FateFacts:
    """What one call received has gone through so far (mutated by the events of its context)."""

    __slots__ = ("cause", "degraded", "final", "on_final", "retries", "service", "shed", "skipped")

    def __init__(self, service: str, on_final: Callable[[str], None] | None = None) -> None:
        self.service = service
        self.on_final = on_final
        """Called with the fate once it is final (the fate layer counts it there)."""
        self.retries = 0
        self.skipped: dict[str, str] = {}
        self.degraded: list[str] = []
        self.shed = ""
        self.cause: tuple[str, grpc.aio.AioRpcError] | None = None
        self.final: str | None = None
        """The fate once written into an abort's trailers (then nothing changes it)."""

    def settle(self, fate: str) -> str:
        """Make `fate` final and tell `on_final`: before an abort sends it, so a caller that
        has the answer and then reads the metrics finds the call counted. Once only: a call
        has one status (grpc.aio refuses a second abort), so a later fate is not counted."""
        if self.final is not None:
            return self.final
        self.final = fate
        if self.on_final is not None:
            self.on_final(fate)
        return fate


current: contextvars.ContextVar[FateFacts | None] = contextvars.ContextVar(
    "mesh_fate_facts", default=None
)


def kind_of(fate: str) -> str:
    """`failed-retry-skipped(budget)` -> `failed-retry-skipped`."""
    return fate.partition("(")[0]


LISTENS_TO: tuple[type, ...] = (ev.RetryScheduled, ev.RetrySkipped, ev.FallbackServed, ev.CallShed)
"""The event types `listen` files (subscribe it with these: the bus then builds no other
event for it)."""


def listen(event: ev.Event) -> None:
    """The bus listener: files each event under the call whose context emitted it."""
    facts = current.get()
    if facts is None:
        return
    kind = type(event)
    if kind is ev.RetryScheduled:
        facts.retries += 1
    elif kind is ev.RetrySkipped:
        facts.skipped[event.dependency] = event.reason  # type: ignore[union-attr]
    elif kind is ev.FallbackServed:
        facts.degraded.append(f"{event.dependency}:{event.served_by}")  # type: ignore[union-attr]
    elif kind is ev.CallShed and event.service == facts.service:  # type: ignore[union-attr]
        facts.shed = f"{facts.service}:{event.reason}"  # type: ignore[union-attr]


def note_cause(dependency: str, err: grpc.aio.AioRpcError) -> None:
    """The dependency's failure this call is about to relay."""
    facts = current.get()
    if facts is not None:
        facts.cause = (dependency, err)


def note_degraded(dependency: str, served_by: str) -> None:
    """A part of the answer stands in for `dependency` (e.g. a PENDING checkout)."""
    facts = current.get()
    if facts is not None:
        facts.degraded.append(f"{dependency}:{served_by}")


def note_shed(limit: str) -> None:
    """This service refused the call by a limit that emits no CallShed (the rate limit)."""
    facts = current.get()
    if facts is not None:
        facts.shed = f"{facts.service}:{limit}"


def fate_in(metadata: Sequence[tuple[str, str | bytes]] | None) -> str:
    """The fate a trailer carries ('' when none: on an OK status that is `ok`,
    `seen_by_caller`)."""
    for key, value in metadata or ():
        if key == FATE_KEY:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return ""


def fate_of(facts: FateFacts, code: grpc.StatusCode, time_left_s: float | None) -> str:
    """The call's fate from its facts and final status (`time_left_s`: its deadline's)."""
    if code is grpc.StatusCode.OK:
        if facts.degraded:
            return f"ok-degraded({facts.degraded[0]})"
        return f"ok-after-retry({facts.retries})" if facts.retries else "ok"
    if facts.shed:
        return f"shed({facts.shed})"
    if facts.cause is not None:
        return _relayed(facts, *facts.cause)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED or (time_left_s is not None and time_left_s <= 0):
        return "failed-deadline"
    return f"failed-not-retryable({code.name})"


def _relayed(facts: FateFacts, dependency: str, err: grpc.aio.AioRpcError) -> str:
    """The fate of a call that failed because its call to `dependency` did (`err`)."""
    local = _refused_here(facts.service, dependency, err)
    if local:
        return local
    skipped = facts.skipped.get(dependency, "")
    if skipped == "budget":
        return f"failed-retry-skipped({skipped})"
    downstream = fate_in(err.trailing_metadata())
    if downstream and not downstream.startswith(("ok", "failed-not-retryable")):
        return downstream
    if err.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
        return "failed-deadline"
    if skipped in ("attempts", "pushback"):
        return f"failed-retry-skipped({skipped})"
    return f"failed-not-retryable({err.code().name})"


def _refused_here(service: str, dependency: str, err: grpc.aio.AioRpcError) -> str:
    """The fate when one of our own strategies refused the call ('' when none did)."""
    if isinstance(err, ClientThrottledError):
        return f"client-throttled({dependency})"
    if isinstance(err, BulkheadFullError):
        return f"shed({service}:bulkhead-{dependency})"
    if isinstance(err, BreakerOpenError):
        return "failed-retry-skipped(breaker-open)"
    if isinstance(err, DeadlineBudgetExhaustedError):
        last = err.__cause__
        if err.stage == "backoff" and isinstance(last, grpc.aio.AioRpcError):
            pushback = classify.pushback_s(last.trailing_metadata())
            if pushback is not None and pushback > 0:
                return "failed-retry-skipped(pushback-past-deadline)"
        return "failed-deadline"
    return ""


def trailers_with_fate(
    code: grpc.StatusCode, trailers: Sequence[tuple[str, str]], time_left_s: float | None
) -> tuple[tuple[str, str], ...]:
    """An abort's trailers with the call's fate added (as they are outside a fate layer)."""
    facts = current.get()
    if facts is None:
        return tuple(trailers)
    return (*trailers, (FATE_KEY, facts.settle(fate_of(facts, code, time_left_s))))


def seen_by_caller(
    code: str, trailers: Sequence[tuple[str, str | bytes]] | None, degraded: str
) -> str:
    """The fate a caller records: the one the answer's trailers carry, else what the caller
    alone can tell (no answer came: its own deadline, a refused connection, a local drop)."""
    carried = fate_in(trailers)
    if carried:
        return carried
    if code == "OK":
        return f"ok-degraded({degraded.split(',')[0]})" if degraded else "ok"
    if code == "DEADLINE_EXCEEDED":
        return "failed-deadline"
    if code == "CLIENT_DROPPED":
        return "client-throttled(loadgen)"
    return f"failed-not-retryable({code})"
