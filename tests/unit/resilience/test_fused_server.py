"""InboundShedding (the inbound and shedding layers as one coroutine per unary call) serves a
script of calls as the two layers nested do: the same results, codes, trailers, events, context
variables seen by the handler and admission state after each call. Streams, exempt methods and a
server without admission keep the two layers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from grpc_aio_resilience import (
    Criticality,
    EventBus,
    InboundInterceptor,
    InboundShedding,
    LimitPolicy,
    QueuePolicy,
    ServerPolicy,
    SheddingInterceptor,
    StreamGuard,
    current_criticality,
    fuse_server_layers,
    inbound_deadline,
    served_deadline,
)
from grpc_aio_resilience import Event as ResilienceEvent
from tests.support.fake_clock import FakeClock

METHOD = "/kv.v1.Store/Get"
EXEMPT = "/grpc.health.v1.Health/Check"


class Aborted(Exception):
    """What grpc.aio's context.abort raises."""


class FakeContext:
    """The parts of a grpc.aio ServicerContext the layers read and write."""

    def __init__(self, remaining_s: float | None, metadata: tuple[tuple[str, str], ...]) -> None:
        self._remaining_s = remaining_s
        self._metadata = metadata
        self._code: grpc.StatusCode | None = None
        self.aborted: tuple[Any, ...] | None = None

    def time_remaining(self) -> float | None:
        return self._remaining_s

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def set_code(self, code: grpc.StatusCode) -> None:
        self._code = code

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = ()) -> None:
        self._code = code
        self.aborted = (code, details, tuple(trailers))
        raise Aborted(details)


Handler = Callable[[Any, Any], Any]


def _details(method: str) -> Any:
    """What the layers read of grpc.HandlerCallDetails."""
    return type("Details", (), {"method": method, "invocation_metadata": ()})()


def _built(fused: bool, policy: ServerPolicy) -> tuple[Any, list[ResilienceEvent]]:
    events: list[ResilienceEvent] = []
    bus = EventBus()
    bus.subscribe(events.append)
    inbound = InboundInterceptor("kv", bus)
    shedding = SheddingInterceptor("kv", policy, bus, FakeClock())
    layers = fuse_server_layers([inbound, shedding]) if fused else [inbound, shedding]
    return layers, events


def _serve(layers: list[Any], method: str, servicer: Handler) -> Handler:
    handler: Any = grpc.unary_unary_rpc_method_handler(servicer)
    call_details = _details(method)
    for layer in reversed(layers):
        handler = layer.wrap(handler, call_details)
    return handler.unary_unary  # type: ignore[no-any-return]


async def _script(fused: bool) -> list[Any]:
    """Every step's outcome, the events it emitted and admission's state after it."""
    policy = ServerPolicy(
        max_in_flight=2,
        limit=LimitPolicy(critical_reserve=0.0),
        queue=QueuePolicy(discipline="none"),
    )
    layers, events = _built(fused, policy)
    admission = layers[-1].shedding.admission if fused else layers[1].admission
    seen: list[Any] = []
    release = asyncio.Event()

    async def answer(request: Any, context: Any) -> str:
        deadline = inbound_deadline()
        seen.append((deadline is not None, current_criticality(), served_deadline() == deadline))
        return f"answer to {request}"

    async def held(request: Any, context: Any) -> str:
        await release.wait()
        return "held"

    async def fails(request: Any, context: Any) -> str:
        context.set_code(grpc.StatusCode.NOT_FOUND)
        raise RuntimeError("no such key")

    async def cancelled(request: Any, context: Any) -> str:
        raise asyncio.CancelledError

    async def step(handler: Handler, context: FakeContext, request: Any = "r") -> Any:
        try:
            return ("ok", await handler(request, context))
        except (Aborted, RuntimeError, asyncio.CancelledError) as err:
            return (type(err).__name__, context.code(), context.aborted)

    critical = (("resilience-criticality", "SHEDDABLE"),)
    outcomes: list[Any] = []
    steps: list[tuple[Handler, FakeContext]] = [
        (_serve(layers, METHOD, answer), FakeContext(0.5, critical)),
        (_serve(layers, METHOD, answer), FakeContext(None, ())),
        (_serve(layers, METHOD, fails), FakeContext(0.5, ())),
        (_serve(layers, METHOD, cancelled), FakeContext(0.5, ())),
        (_serve(layers, EXEMPT, answer), FakeContext(0.5, critical)),
    ]
    for handler, context in steps:
        outcomes.append((await step(handler, context), admission.in_flight))
    holding = [
        asyncio.ensure_future(step(_serve(layers, METHOD, held), FakeContext(0.5, ())))
        for _ in range(2)
    ]
    await asyncio.sleep(0)
    refused = await step(_serve(layers, METHOD, answer), FakeContext(0.5, critical))
    outcomes.append((refused, admission.in_flight))
    release.set()
    outcomes.append((await asyncio.gather(*holding), admission.in_flight))
    timeless = [
        (type(e).__name__, *(e[:3] if type(e).__name__ == "ServerCallFinished" else e))
        for e in events
    ]
    return [outcomes, seen, timeless, current_criticality(), inbound_deadline()]


def test_the_fused_layer_serves_a_script_as_the_two_layers_do() -> None:
    layered = asyncio.run(_script(fused=False))
    fused = asyncio.run(_script(fused=True))
    assert fused == layered
    outcomes, seen, events, *after = fused
    assert outcomes[0][0] == ("ok", "answer to r")
    assert seen[0][:2] == (True, Criticality.SHEDDABLE)
    assert outcomes[2][0][:2] == ("RuntimeError", grpc.StatusCode.NOT_FOUND)
    assert outcomes[5][0][1] is grpc.StatusCode.RESOURCE_EXHAUSTED  # the third, over the limit
    assert outcomes[6] == ([("ok", "held"), ("ok", "held")], 0)
    assert any(event[0] == "CallShed" for event in events)
    assert after == [None, None]  # every context variable set for a call is reset after it


def test_only_inbound_directly_outside_shedding_is_fused() -> None:
    bus = EventBus()
    inbound = InboundInterceptor("kv", bus)
    shedding = SheddingInterceptor("kv", ServerPolicy(), bus)
    fused = fuse_server_layers([inbound, shedding])
    assert len(fused) == 1 and isinstance(fused[0], InboundShedding)
    apart = fuse_server_layers([inbound, StreamGuard("kv"), shedding])
    assert [type(layer) for layer in apart] == [
        InboundInterceptor,
        StreamGuard,
        SheddingInterceptor,
    ]


@pytest.mark.parametrize("method", [METHOD, EXEMPT])
def test_streams_and_exempt_methods_keep_the_two_layers(method: str) -> None:
    bus = EventBus()
    inbound = InboundInterceptor("kv", bus)
    shedding = SheddingInterceptor("kv", ServerPolicy(max_streams_in_flight=4), bus)
    layer = InboundShedding(inbound, shedding)
    details = _details(method)

    async def stream(request: Any, context: Any) -> Any:
        yield request

    handler = grpc.unary_stream_rpc_method_handler(stream)
    nested = inbound.wrap(shedding.wrap(handler, details), details)
    assert layer.wrap(handler, details) is nested  # the inbound layer's cached wrapper
