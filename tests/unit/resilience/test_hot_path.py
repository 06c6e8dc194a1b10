"""The per-call path pays only for what the call uses: events only for the types someone takes,
no layer of its own for an attempt nobody observes, no metadata copy with nothing to add."""

from __future__ import annotations

import random
import sys
import time
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import (
    ServerPolicy,
    SheddingInterceptor,
    SystemClock,
    criticality,
    from_dict,
    server_interceptors,
)
from grpc_aio_resilience import attempt as attempt_module
from grpc_aio_resilience import events as ev
from grpc_aio_resilience import inbound as inbound_module
from grpc_aio_resilience import pipeline as pipeline_module
from grpc_aio_resilience.attempt import AttemptHook
from grpc_aio_resilience.context import CallContext
from grpc_aio_resilience.deadline import (
    AttemptTimeout,
    TotalDeadline,
    inbound_deadline,
    served_deadline,
)
from grpc_aio_resilience.edge_policy import DeadlinePolicy, EdgePolicy
from grpc_aio_resilience.errors import BreakerOpenError, DeadlineBudgetExhaustedError
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.inbound import InboundInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, FakeCall, FakeWire, call

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def _edge() -> EdgePolicy:
    return from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 10.0, "attempt_s": 1.0},
            "retry": {"max_attempts": 3, "budget": {"enabled": False}},
            "breaker": {"consecutive_failures": 4, "failure_rate": None},
        },
    )


def _count_built(monkeypatch: pytest.MonkeyPatch, module: Any, *names: str) -> dict[str, int]:
    """Counts how many of each event type `module` builds (the types stay the same)."""
    built = dict.fromkeys(names, 0)
    for name in names:
        kind = getattr(module, name)

        def counting(*args: Any, _kind: Any = kind, _name: str = name) -> Any:
            built[_name] += 1
            return _kind(*args)

        monkeypatch.setattr(module, name, counting)
    return built


def test_a_listener_that_names_its_types_gets_only_those() -> None:
    bus = EventBus()
    everything: list[ev.Event] = []
    retries: list[ev.Event] = []
    bus.subscribe(retries.append, (ev.RetryScheduled,))
    assert not bus.wants(ev.AttemptStarted)
    assert bus.wants(ev.RetryScheduled)
    bus.subscribe(everything.append)
    assert bus.wants(ev.AttemptStarted)
    scheduled = ev.RetryScheduled("dep", "m", 1, "UNAVAILABLE", 0.1, None)
    started = ev.AttemptStarted("dep", "m", 1, 1.0)
    bus.emit(started)
    bus.emit(scheduled)
    assert retries == [scheduled]
    assert everything == [started, scheduled]


async def test_events_nobody_takes_are_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _count_built(monkeypatch, attempt_module, "AttemptStarted", "AttemptFinished")
    built |= _count_built(monkeypatch, pipeline_module, "CallFinished")
    clock = FakeClock()
    bus = EventBus()
    retries: list[ev.Event] = []
    bus.subscribe(retries.append, (ev.RetryScheduled,))
    pipeline = build_pipeline(_edge(), dependency="dep", bus=bus, clock=clock)
    wire = FakeWire(clock, lambda m, n: UNAVAILABLE if n < 2 else None)
    assert await call(pipeline, wire) == f"response to {GET_PROFILE}"
    assert wire.counts[GET_PROFILE] == 2
    assert [type(e) for e in retries] == [ev.RetryScheduled]
    assert built == {"AttemptStarted": 0, "AttemptFinished": 0, "CallFinished": 0}


async def test_a_listener_of_every_type_still_gets_every_event() -> None:
    clock = FakeClock()
    bus = EventBus()
    seen: list[ev.Event] = []
    bus.subscribe(seen.append)
    pipeline = build_pipeline(_edge(), dependency="dep", bus=bus, clock=clock)
    wire = FakeWire(clock, lambda m, n: UNAVAILABLE if n < 2 else None)
    await call(pipeline, wire)
    assert [type(e).__name__ for e in seen] == [
        "AttemptStarted",
        "AttemptFinished",
        "RetryScheduled",
        "AttemptStarted",
        "AttemptFinished",
        "CallFinished",
    ]


async def test_rejected_calls_still_say_how_many_attempts_were_sent() -> None:
    clock = FakeClock()
    pipeline = build_pipeline(
        _edge(), dependency="dep", bus=EventBus(), clock=clock, rng=random.Random(1)
    )
    wire = FakeWire(clock, lambda m, n: UNAVAILABLE)
    with pytest.raises(grpc.aio.AioRpcError):
        await call(pipeline, wire)  # three failures of four that open the breaker
    with pytest.raises(BreakerOpenError) as raised:
        await call(pipeline, wire)
    assert raised.value.attempts_sent == 1


def _ctx(metadata: grpc.aio.Metadata | None) -> CallContext:
    details = grpc.aio.ClientCallDetails(GET_PROFILE.encode(), 1.0, metadata, None, None)
    wire = FakeWire(FakeClock(), lambda m, n: None)
    return CallContext("dep", GET_PROFILE, None, details, wire.continuation)


def test_an_attempt_nobody_observes_gets_no_layer_of_its_own() -> None:
    hook = AttemptHook(EventBus(), FakeClock(), None)
    ctx = _ctx(grpc.aio.Metadata())
    sent = object()
    assert hook.execute(ctx, lambda c: sent) is sent  # type: ignore[arg-type, return-value]
    assert ctx.attempt_metadata is None  # nothing to add: the caller's metadata goes as it is


def test_an_attempt_still_carries_the_served_calls_criticality() -> None:
    hook = AttemptHook(EventBus(), FakeClock(), None)
    ctx = _ctx(grpc.aio.Metadata())
    token = criticality.set_current(criticality.Criticality.SHEDDABLE)
    try:
        hook.execute(ctx, lambda c: None)  # type: ignore[arg-type, return-value]
    finally:
        criticality.reset_current(token)
    assert ctx.attempt_metadata is not None
    assert ctx.attempt_metadata.get(criticality.METADATA_KEY) == "SHEDDABLE"
    assert ctx.criticality is criticality.Criticality.SHEDDABLE


class _Context:
    """The little of a grpc.aio ServicerContext the inbound layer reads."""

    def time_remaining(self) -> float:
        return 2.0

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def code(self) -> None:
        return None


async def test_the_server_builds_no_call_events_nobody_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = _count_built(monkeypatch, inbound_module, "ServerCallStarted", "ServerCallFinished")
    bus = EventBus()
    layer = InboundInterceptor("svc", bus)
    seen_deadline: list[float | None] = []

    async def handler(request: Any, context: Any) -> str:
        seen_deadline.append(inbound_deadline())
        return "answer"

    behaviour = layer._wrap(handler, GET_PROFILE)
    assert await behaviour(None, _Context()) == "answer"
    assert built == {"ServerCallStarted": 0, "ServerCallFinished": 0}
    assert seen_deadline[0] is not None  # outbound calls still read the inbound deadline
    monkeypatch.undo()
    finished: list[ev.Event] = []
    bus.subscribe(finished.append, (ev.ServerCallFinished,))
    await behaviour(None, _Context())
    assert [(type(e), e.code) for e in finished] == [(ev.ServerCallFinished, "OK")]  # type: ignore[union-attr]


def test_the_deadline_layers_add_no_layer_of_their_own() -> None:
    clock = FakeClock()
    policy = DeadlinePolicy(total_s=2.0, attempt_s=1.0)
    ctx = _ctx(None)
    sent: Any = object()

    def inner(ctx: CallContext) -> Any:
        return sent

    assert TotalDeadline(policy, clock).execute(ctx, inner) is sent
    assert AttemptTimeout(policy, clock, EventBus()).execute(ctx, inner) is sent
    assert (ctx.deadline_s, ctx.attempt_timeout_s) == (clock.now() + 2.0, 1.0)


async def test_an_attempt_with_no_time_left_is_refused_when_awaited() -> None:
    clock = FakeClock()
    ctx = _ctx(None)
    ctx.deadline_s = clock.now()
    refusal = AttemptTimeout(DeadlinePolicy(), clock, EventBus()).execute(ctx, _never)
    with pytest.raises(DeadlineBudgetExhaustedError):
        await refusal


async def _never(ctx: CallContext) -> Any:
    raise AssertionError("an attempt with no time left reached the wire")


class _CountingContext(_Context):
    """Counts reads of the invocation metadata (grpc.aio builds the tuple on every read)."""

    def __init__(self, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        self.metadata = metadata
        self.reads = 0

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        self.reads += 1
        return self.metadata


async def test_the_server_side_reads_a_calls_metadata_for_its_criticality_once() -> None:
    """Inbound settles the criticality (none sent: none); admission inside it does not look
    again. Shedding mounted alone still reads what the caller sent."""
    layers = server_interceptors("svc", ServerPolicy(max_in_flight=4), EventBus())
    seen: list[criticality.Criticality | None] = []

    async def handler(request: Any, context: Any) -> str:
        seen.append(criticality.current())
        return "answer"

    behaviour = layers.inbound._wrap(layers.shedding._wrap(handler, GET_PROFILE), GET_PROFILE)
    context = _CountingContext()
    assert await behaviour(None, context) == "answer"
    assert context.reads == 1 and seen == [None]
    alone = SheddingInterceptor("svc", ServerPolicy(max_in_flight=4))._wrap(handler, GET_PROFILE)
    sheddable = _CountingContext(((criticality.METADATA_KEY, "SHEDDABLE"),))
    assert await alone(None, sheddable) == "answer"
    assert sheddable.reads == 1


def test_the_system_clock_reads_time_without_a_python_frame() -> None:
    clock = SystemClock()
    frames: list[str] = []

    def record(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            frames.append(frame.f_code.co_name)

    before = time.monotonic()
    sys.setprofile(record)
    try:
        now = clock.now()
    finally:
        sys.setprofile(None)
    assert before <= now <= time.monotonic()
    assert frames == []


async def test_the_inbound_layer_sets_the_calls_context_without_frames_of_ours() -> None:
    """The deadline and the criticality are set and reset by the context variables' own
    methods, not through a function of ours each (a Python frame per call for each)."""
    layer = InboundInterceptor("svc", EventBus())
    seen: list[tuple[float | None, criticality.Criticality | None]] = []

    async def handler(request: Any, context: Any) -> str:
        seen.append((inbound_deadline(), criticality.current()))
        return "answer"

    behaviour = layer._wrap(handler, GET_PROFILE)
    frames: list[str] = []

    def record(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            frames.append(frame.f_code.co_name)

    before = time.monotonic()
    sys.setprofile(record)
    try:
        sent = _CountingContext(((criticality.METADATA_KEY, "SHEDDABLE"),))
        answer = await behaviour(None, sent)
    finally:
        sys.setprofile(None)
    assert answer == "answer" and sent.reads == 1
    [(deadline_s, level)] = seen
    assert deadline_s is not None and before + 2.0 <= deadline_s <= time.monotonic() + 2.0
    assert level is criticality.Criticality.SHEDDABLE
    assert (inbound_deadline(), criticality.current()) == (None, None)  # reset after the call
    assert served_deadline() == deadline_s  # kept: grpc.aio answers later in this task
    setters = {"set_inbound_deadline", "reset_inbound_deadline", "mark_served_deadline"}
    setters |= {"set_current", "reset_current", "inbound_criticality"}
    assert setters.isdisjoint(frames), frames


async def test_a_direct_attempt_starts_without_a_coroutine_of_its_continuation() -> None:
    """A continuation that is a plain call underneath (grpc_aio_resilience.direct) is called
    as such: the attempt goes out with its own timeout, and nothing awaits the continuation."""
    pipeline = build_pipeline(_edge(), dependency="dep", bus=EventBus(), clock=FakeClock())
    assert pipeline.fused is not None
    started: list[tuple[bytes, float | None, str]] = []

    def start(details: grpc.aio.ClientCallDetails, request: str) -> FakeCall:
        started.append((details.method, details.timeout, request))
        return FakeCall("answer", None)

    async def continuation(details: grpc.aio.ClientCallDetails, request: str) -> FakeCall:
        raise AssertionError("the continuation's coroutine was awaited")

    details = grpc.aio.ClientCallDetails(GET_PROFILE.encode(), None, None, None, None)
    ctx = CallContext("dep", GET_PROFILE, "request", details, continuation, start=start)
    final = await pipeline.run(ctx)
    assert await final == "answer"
    assert started == [(GET_PROFILE.encode(), 1.0, "request")] and ctx.sent == 1
