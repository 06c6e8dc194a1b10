"""The hot path's shortcuts decide as the long way does: the bus's `heard` follows every
subscription (a listener added late hears the next call, client and server), a fixed limit's
counted path refuses, hands over and gives back places as `admit_now` and `release` do, the
inbound layer runs it in its own frame only where it may, and the throttle's window slides
when a bucket's time is over. No network, a fake clock where time matters."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import grpc
import pytest

from grpc_aio_resilience import ServerPolicy, from_dict, server_interceptors
from grpc_aio_resilience import events as ev
from grpc_aio_resilience.admission import Admission
from grpc_aio_resilience.criticality import METADATA_KEY, Criticality
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EVENT_KINDS, Event, EventBus
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_aio_resilience.server_mount import ChainedHandlers
from grpc_aio_resilience.throttle import ThrottleWindow
from grpc_aio_resilience.throttle_policy import ThrottlePolicy
from grpc_resilience_mesh.services.faults.injection import FaultInterceptor, FaultSpec, FaultTable
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.manual_clock import ManualClock
from tests.unit.resilience.unit_fakes import FakeWire, call

GET = "/kv.Kv/Get"


def test_heard_follows_every_subscription() -> None:
    bus = EventBus()
    assert not bus.heard
    bus.subscribe(lambda e: None, [ev.AttemptStarted])
    assert ev.AttemptStarted in bus.heard and ev.CallFinished not in bus.heard
    bus.subscribe(lambda e: None, [ev.CallShed])
    assert {ev.AttemptStarted, ev.CallShed} <= bus.heard
    bus.subscribe(lambda e: None)  # every type
    assert bus.heard == EVENT_KINDS and all(bus.wants(kind) for kind in EVENT_KINDS)


async def test_a_listener_subscribed_late_hears_the_next_call_on_the_client() -> None:
    clock = FakeClock()
    bus = EventBus()
    pipeline = build_pipeline(EdgePolicy(), dependency="dep", bus=bus, clock=clock)
    wire = FakeWire(clock, lambda method, n: None)
    await call(pipeline, wire)  # nobody listens: no event built
    seen: list[Event] = []
    bus.subscribe(seen.append, [ev.AttemptStarted, ev.AttemptFinished, ev.CallFinished])
    await call(pipeline, wire)
    assert [type(e) for e in seen] == [ev.AttemptStarted, ev.AttemptFinished, ev.CallFinished]


class Details(NamedTuple):
    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()


class Refused(Exception):
    """What the fake context's abort raises, as grpc.aio's raises to end the call."""


class Context:
    """A served call's context: its metadata (the caller's criticality), no deadline."""

    def __init__(self, level: Criticality | None = None) -> None:
        self._metadata = () if level is None else ((METADATA_KEY, level.name),)
        self.aborted: grpc.StatusCode | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def time_remaining(self) -> float | None:
        return None

    def code(self) -> grpc.StatusCode | None:
        return self.aborted

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = ()) -> None:
        self.aborted = code
        raise Refused(details)


class Server:
    """The library's three layers (`server_interceptors`) in front of a handler that holds
    each call until `release` is set, as `protect_server` serves them."""

    def __init__(self, bus: EventBus, **policy: Any) -> None:
        self.layers = server_interceptors("kv", from_dict(ServerPolicy, policy), bus)
        self.release = asyncio.Event()
        self.handlers = ChainedHandlers(list(self.layers))
        self.handlers.add_methods({GET: grpc.unary_unary_rpc_method_handler(self._serve)})

    async def _serve(self, request: Any, context: Any) -> str:
        await self.release.wait()
        return "answer"

    def start(self, level: Criticality | None = None) -> asyncio.Task[Any]:
        handler = self.handlers.service(Details(GET))
        assert handler is not None
        return asyncio.ensure_future(handler.unary_unary(None, Context(level)))

    @property
    def admission(self) -> Admission:
        return self.layers.shedding.admission


async def _held(server: Server, *levels: Criticality | None) -> list[asyncio.Task[Any]]:
    tasks = [server.start(level) for level in levels]
    for _ in range(20):
        await asyncio.sleep(0)
    return tasks


async def test_a_fixed_limit_counts_calls_in_the_inbound_frame_and_refuses_as_before() -> None:
    bus = EventBus()
    sheds: list[Event] = []
    bus.subscribe(sheds.append, [ev.CallShed])
    server = Server(bus, max_in_flight=4, limit={"critical_reserve": 0.5})
    handler = server.handlers.service(Details(GET))
    assert handler is not None
    inner = handler.unary_unary
    assert server.admission.fixed_shares == (0, 2, 2, 4, 4)
    held = await _held(server, None, Criticality.SHEDDABLE)
    assert server.admission.in_flight == 2
    refused = await _held(server, Criticality.SHEDDABLE, Criticality.CRITICAL)
    assert refused[0].done() and isinstance(refused[0].exception(), Refused)
    assert [e.reason for e in sheds if isinstance(e, ev.CallShed)] == ["criticality"]
    assert not refused[1].done() and server.admission.in_flight == 3
    held += [refused[1], *await _held(server, Criticality.CRITICAL_PLUS)]
    over = await _held(server, Criticality.CRITICAL_PLUS)
    assert isinstance(over[0].exception(), Refused)
    assert [e.reason for e in sheds if isinstance(e, ev.CallShed)] == ["criticality", "limit"]
    server.release.set()
    assert await asyncio.gather(*held) == ["answer"] * 4
    assert server.admission.in_flight == 0
    assert inner is server.handlers.service(Details(GET)).unary_unary  # type: ignore[union-attr]


async def test_a_late_listener_of_server_calls_hears_the_next_one() -> None:
    bus = EventBus()
    server = Server(bus, max_in_flight=4)
    server.release.set()
    assert await server.start() == "answer"
    seen: list[Event] = []
    bus.subscribe(seen.append, [ev.ServerCallStarted, ev.ServerCallFinished])
    assert await server.start(Criticality.SHEDDABLE) == "answer"
    assert [type(e) for e in seen] == [ev.ServerCallStarted, ev.ServerCallFinished]
    assert server.admission.in_flight == 0


async def test_a_counted_call_hands_its_place_to_a_waiter_a_later_policy_queued() -> None:
    """A call counted in under a fixed limit gives its place to a call that queued after a swap
    turned a queue on: the place is not left free while the waiter times out."""
    bus = EventBus()
    server = Server(bus, max_in_flight=1)
    first = (await _held(server, None))[0]
    assert server.admission.fixed_shares is not None and server.admission.in_flight == 1
    server.layers.update(
        from_dict(ServerPolicy, {"max_in_flight": 1, "queue": {"discipline": "fifo"}})
    )
    assert server.admission.fixed_shares is None  # a queue to ask: the general path
    waiter = (await _held(server, None))[0]
    assert not waiter.done() and len(server.admission.waiters) == 1
    server.release.set()
    assert await asyncio.wait_for(asyncio.gather(first, waiter), 5.0) == ["answer"] * 2
    assert server.admission.in_flight == 0


@pytest.mark.parametrize(
    "policy",
    [
        {"max_in_flight": 0},
        {"limit": {"algorithm": "vegas"}},
        {"limit": {"deadline_aware": True}},
        {"queue": {"discipline": "fifo"}},
        {"intake": {"discipline": "codel"}},
    ],
)
def test_admission_counts_only_under_a_fixed_limit_with_nothing_else_to_ask(
    policy: dict[str, Any],
) -> None:
    fixed = Admission("kv", ServerPolicy(), ManualClock(), EventBus())
    assert fixed.fixed_shares is not None
    other = Admission("kv", from_dict(ServerPolicy, policy), ManualClock(), EventBus())
    assert other.fixed_shares is None


async def test_the_throttle_window_slides_when_a_bucket_ends() -> None:
    clock = ManualClock(start_s=1000.0)  # buckets of 1 s from 1000.0
    window = ThrottleWindow(ThrottlePolicy(window_s=10.0, min_requests=1), clock)
    window.record(accepted=False)
    await clock.advance(0.9)
    window.record(accepted=False)  # the same bucket as the first
    await clock.advance(0.2)
    window.record(accepted=True)  # the next one
    await clock.advance(8.7)  # t = 1009.8: all three still in the window
    assert window.rejection_probability() > 0.0
    assert (window.requests, window.accepts) == (3, 1)
    await clock.advance(0.3)  # t = 1010.1: the first bucket has left it, the second not
    assert window.rejection_probability() == 0.0
    assert (window.requests, window.accepts) == (1, 1)
    await clock.advance(1.0)
    window.record(accepted=False)
    assert (window.requests, window.accepts) == (1, 0)


async def test_a_fault_set_or_cleared_holds_from_the_next_call_of_a_wrapped_method() -> None:
    """The fault layer wraps once per method in a chain, and anew after each table edit."""
    faults = FaultTable()
    handlers = ChainedHandlers([FaultInterceptor("kv", faults, EventBus())])

    async def answer(request: Any, context: Any) -> str:
        return "answer"

    handlers.add_methods({GET: grpc.unary_unary_rpc_method_handler(answer)})

    async def served() -> str:
        handler = handlers.service(Details(GET))
        assert handler is not None
        try:
            return str(await handler.unary_unary(None, Context()))
        except Refused:
            return "refused"

    assert await served() == "answer"
    faults.set(FaultSpec.parse(GET, 1.0, "UNAVAILABLE", 0.0, -1, 0, False))
    assert [await served(), await served()] == ["refused", "refused"]
    faults.clear(GET)
    assert await served() == "answer"
