"""ServerChain fused (decoding with fates, inbound with shedding: two coroutines per unary call)
serves a script of calls as the same layers each with its own wrapper: the same answers, codes,
trailers (the fate), counted fates, events and admission state. SERVER_ORDER keeps its meaning:
the chain's layers are the declared ones, only how a unary call runs through them changes."""

from __future__ import annotations

import asyncio
from collections import namedtuple
from typing import Any

import grpc

from grpc_aio_resilience import (
    DeadlineBudgetExhaustedError,
    EventBus,
    InboundShedding,
    LimitPolicy,
    QueuePolicy,
    ServerPolicy,
    note_cause,
)
from mesh.faults.injection import FaultTable
from mesh.runtime.decoding import DecodingFates
from mesh.runtime.server_chain import ServerChain, server_layers
from mesh.v1 import profile_pb2

Details = namedtuple("Details", "method invocation_metadata")
GET = "/mesh.v1.ProfileService/GetProfile"
HEALTH = "/grpc.health.v1.Health/Check"
REQUEST = profile_pb2.GetProfileRequest(user_id="u1").SerializeToString()
REPLY = profile_pb2.GetProfileResponse(profile=profile_pb2.Profile(user_id="u1"))


class Aborted(Exception):
    """What grpc.aio's context.abort raises."""


class Context:
    """The parts of a grpc.aio ServicerContext the layers read and write."""

    def __init__(self, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        self._metadata = metadata
        self._code: grpc.StatusCode | None = None
        self.trailers: tuple[tuple[str, str], ...] = ()
        self.details = ""

    def time_remaining(self) -> float:
        return 0.5

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def set_code(self, code: grpc.StatusCode) -> None:
        self._code = code

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.trailers

    def set_trailing_metadata(self, trailers: tuple[tuple[str, str], ...]) -> None:
        self.trailers = tuple(trailers)

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = ()) -> None:
        self._code, self.details, self.trailers = code, details, tuple(trailers)
        raise Aborted(details)


async def answer(request: Any, context: Any) -> Any:
    assert isinstance(request, profile_pb2.GetProfileRequest)
    return REPLY


async def relays_a_failure(request: Any, context: Any) -> Any:
    err = DeadlineBudgetExhaustedError("account", "/mesh.v1.Account/Get", "attempt")
    note_cause("account", err)
    context.set_code(grpc.StatusCode.DEADLINE_EXCEEDED)
    raise RuntimeError("relayed")


async def held(request: Any, context: Any) -> Any:
    await asyncio.sleep(0.01)
    return REPLY


def _chain(fused: bool) -> tuple[ServerChain, list[Any], list[tuple[str, str]]]:
    events: list[Any] = []
    counted: list[tuple[str, str]] = []
    bus = EventBus()
    bus.subscribe(events.append)
    policy = ServerPolicy(
        max_in_flight=1,
        limit=LimitPolicy(critical_reserve=0.0),
        queue=QueuePolicy(discipline="none"),
    )
    layers = server_layers(
        "profile", policy, bus, FaultTable(), count_fate=lambda m, f: counted.append((m, f))
    )
    return ServerChain(layers, fused=fused), events, counted


async def _call(chain: ServerChain, method: str, servicer: Any, payload: bytes) -> Any:
    async def lookup(details: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(
            servicer, request_deserializer=profile_pb2.GetProfileRequest.FromString
        )

    handler = await chain.intercept_service(lookup, Details(method, ()))
    assert handler is not None
    context = Context((("resilience-criticality", "CRITICAL"),))
    try:
        outcome: Any = await handler.unary_unary(payload, context)
    except (Aborted, RuntimeError) as err:
        outcome = type(err).__name__
    return outcome, context.code(), context.details, context.trailers


async def _script(fused: bool) -> list[Any]:
    chain, events, counted = _chain(fused)
    outcomes = [
        await _call(chain, GET, answer, REQUEST),
        await _call(chain, GET, answer, b"\xff\xff"),
        await _call(chain, GET, relays_a_failure, REQUEST),
        await _call(chain, HEALTH, answer, REQUEST),
    ]
    first = asyncio.ensure_future(_call(chain, GET, held, REQUEST))
    await asyncio.sleep(0)
    outcomes.append(await _call(chain, GET, answer, REQUEST))  # over the limit of one
    outcomes.append(await first)
    kinds = [type(event).__name__ for event in events]
    return [outcomes, counted, kinds]


def test_the_fused_chain_serves_a_script_as_the_layered_one() -> None:
    layered = asyncio.run(_script(fused=False))
    fused = asyncio.run(_script(fused=True))
    assert fused == layered
    outcomes, counted, kinds = fused
    assert outcomes[0] == (REPLY, None, "", (("resilience-fate", "ok"),))
    assert outcomes[1][1] is grpc.StatusCode.INVALID_ARGUMENT and outcomes[1][3] == ()
    assert outcomes[2][:2] == ("RuntimeError", grpc.StatusCode.DEADLINE_EXCEEDED)
    assert outcomes[4][1] is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert ("resilience-fate", "shed(profile:limit)") in outcomes[4][3]
    assert counted == [
        (GET, "ok"),
        (GET, "failed-deadline"),
        (GET, "shed(profile:limit)"),
        (GET, "ok"),
    ]
    assert "CallShed" in kinds


def test_the_chain_keeps_its_declared_layers_and_fuses_unary_calls() -> None:
    fused, _, _ = _chain(fused=True)
    layered, _, _ = _chain(fused=False)
    assert [type(layer) for layer in fused.layers] == [type(layer) for layer in layered.layers]
    serving = {type(layer) for layer in fused._inner_first}
    assert {DecodingFates, InboundShedding} <= serving
    assert not {DecodingFates, InboundShedding} & {type(layer) for layer in layered._inner_first}
