"""App-level faults (grpc_aio_resilience.faults): a rule is checked where it is written, the
first matching rule is applied, a hit call is delayed then failed with the rule's code, the
share of calls hit follows the injected random draws, and probes are never faulted. No
network: the layer's handlers are called as grpc.aio would call them, on a fake clock."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import grpc
import pytest

from grpc_aio_resilience import (
    Event,
    EventBus,
    FaultInjected,
    FaultLayer,
    FaultRule,
    FaultTable,
    OptionError,
    from_dict,
)
from tests.support.fake_clock import FakeClock

GET = "/kv.v1.Kv/Get"
PUT = "/kv.v1.Kv/Put"
WATCH = "/kv.v1.Kv/Watch"


class Details(NamedTuple):
    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()


class Aborted(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(code, details)
        self.code = code
        self.details = details


class FakeContext:
    """What the layer's behaviour and `abort_with` ask of a grpc.aio ServicerContext."""

    def time_remaining(self) -> float | None:
        return None

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = None) -> None:
        raise Aborted(code, details)


async def _served(request: Any, context: Any) -> str:
    return f"served {request}"


async def _three(request: Any, context: Any) -> AsyncIterator[int]:
    for n in range(3):
        yield n


UNARY = grpc.unary_unary_rpc_method_handler(_served)
STREAM = grpc.unary_stream_rpc_method_handler(_three)


async def _call(layer: FaultLayer, method: str = GET, metadata: tuple[Any, ...] = ()) -> str:
    handler = layer.wrap(UNARY, Details(method, metadata))
    assert handler is not None
    try:
        result: str = await handler.unary_unary("r", FakeContext())
    except Aborted as err:
        return str(err.code.name)
    return result


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"code": "NOPE"}, "rules[0].code: 'NOPE' is not a gRPC error code name"),
        ({"code": "OK"}, "rules[0].code: 'OK' is not a gRPC error code name"),
        ({"code": "INTERNAL", "rate": 1.5}, "rules[0].rate: 1.5 is not in [0, 1]"),
        ({"code": "INTERNAL", "delay_ms": -1}, "rules[0].delay_ms: -1 is not in [0, 600000]"),
        ({"method": "Get", "code": "INTERNAL"}, "rules[0].method: 'Get' is not"),
        ({}, "rules[0].code: a rule with neither a code nor a delay_ms does nothing"),
        ({"code": "INTERNAL", "header": {"x-a": 1}}, "rules[0].header.x-a: 1 is not text"),
        ({"code": "INTERNAL", "header": "x-a"}, "rules[0].header: 'x-a' is not a mapping"),
        ({"code": "INTERNAL", "oops": 1}, "rules[0].oops: is not an option of FaultRule"),
    ],
)
def test_a_bad_rule_is_refused_naming_its_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionError) as refused:
        from_dict(FaultRule, raw, path="rules[0]")
    assert str(refused.value).startswith(message)


def test_a_rule_is_normalised_where_it_is_written() -> None:
    rule = FaultRule(method="kv.v1.Kv/Get", code="unavailable", header={"X-Chaos": "on"})
    assert (rule.method, rule.code, rule.header) == (GET, "UNAVAILABLE", {"x-chaos": "on"})


def test_the_first_matching_rule_wins_and_a_header_scopes_a_rule() -> None:
    scoped = FaultRule(method=GET, code="INTERNAL", header={"x-chaos": "on"})
    everything = FaultRule(code="UNAVAILABLE")
    table = FaultTable([scoped, everything])
    assert table.match(GET, (("x-chaos", "on"),)) is scoped
    assert table.match(GET, (("x-chaos", "off"),)) is everything
    assert table.match(PUT, (("x-chaos", "on"),)) is everything
    with pytest.raises(OptionError, match="rules: takes at most 64"):
        table.set([everything] * 65)
    assert table.list() == [scoped, everything]
    table.clear()
    assert table.match(GET, ()) is None


async def test_an_empty_table_serves_the_handler_itself() -> None:
    layer = FaultLayer(FaultTable())
    assert layer.wrap(UNARY, Details(GET)) is UNARY
    assert await _call(layer) == "served r"


async def test_a_hit_call_is_delayed_then_failed_with_the_rules_code() -> None:
    clock, events = FakeClock(), list[Event]()
    bus = EventBus()
    bus.subscribe(events.append)
    table = FaultTable([FaultRule(method=GET, code="UNAVAILABLE", delay_ms=250)])
    layer = FaultLayer(table, "kv", bus, clock=clock)
    assert await _call(layer) == "UNAVAILABLE"
    assert clock.sleeps_s == [0.25]
    assert events == [FaultInjected("kv", GET, "UNAVAILABLE", 0.25)]
    assert await _call(layer, PUT) == "served r"


async def test_a_rule_without_a_code_only_delays() -> None:
    clock, events = FakeClock(), list[Event]()
    bus = EventBus()
    bus.subscribe(events.append)
    layer = FaultLayer(FaultTable([FaultRule(delay_ms=40)]), "kv", bus, clock=clock)
    assert await _call(layer) == "served r"
    assert clock.sleeps_s == [0.04]
    assert events == [FaultInjected("kv", GET, "OK", 0.04)]


@pytest.mark.parametrize("rate", [0.0, 0.3, 0.75])
async def test_the_share_of_calls_hit_is_the_injected_draws(rate: float) -> None:
    layer = FaultLayer(
        FaultTable([FaultRule(code="ABORTED", rate=rate)]), clock=FakeClock(), rng=random.Random(7)
    )
    outcomes = [await _call(layer) for _ in range(200)]
    draws = random.Random(7)
    expected = ["ABORTED" if draws.random() < rate else "served r" for _ in range(200)]
    assert outcomes == expected
    hits = outcomes.count("ABORTED")
    assert hits == 0 if rate == 0.0 else 0 < hits < 200


@pytest.mark.parametrize(
    "method",
    ["/grpc.health.v1.Health/Check", "/grpc_aio_resilience.FaultAdmin/Clear"],
)
async def test_probes_and_the_fault_admin_are_never_faulted(method: str) -> None:
    layer = FaultLayer(FaultTable([FaultRule(code="UNAVAILABLE")]), clock=FakeClock())
    assert await _call(layer, method) == "served r"
    assert await _call(layer, GET) == "UNAVAILABLE"


async def _stream(layer: FaultLayer) -> tuple[list[int], str]:
    handler = layer.wrap(STREAM, Details(WATCH))
    assert handler is not None
    got: list[int] = []
    try:
        async for message in handler.unary_stream("r", FakeContext()):
            got.append(message)
    except Aborted as err:
        return got, err.code.name
    return got, "OK"


async def test_a_stream_is_failed_before_its_first_message_or_delayed_whole() -> None:
    clock = FakeClock()
    failing = FaultLayer(FaultTable([FaultRule(method=WATCH, code="INTERNAL")]), clock=clock)
    assert await _stream(failing) == ([], "INTERNAL")
    slow = FaultLayer(FaultTable([FaultRule(method=WATCH, delay_ms=100)]), clock=clock)
    assert await _stream(slow) == ([0, 1, 2], "OK")
    assert clock.sleeps_s == [0.1]
