"""The fault admin and the fault layer over real grpc.aio on loopback: rules set with JSON fail
exactly the calls they match (by method and by header), a bad body changes nothing and names
the field, Clear brings every call back, and a rule on "*" spares the admin served beside it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import (
    FaultLayer,
    FaultTable,
    fault_admin_handler,
    protect_server,
    server_interceptors,
)

GET = "/echo.v1.Echo/Get"
WATCH = "/echo.v1.Echo/Watch"
ADMIN = "/grpc_aio_resilience.FaultAdmin/"


async def _get(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


async def _watch(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    for n in range(3):
        yield request + str(n).encode()


ECHO = grpc.method_handlers_generic_handler(
    "echo.v1.Echo",
    {
        "Get": grpc.unary_unary_rpc_method_handler(_get),
        "Watch": grpc.unary_stream_rpc_method_handler(_watch),
    },
)


@asynccontextmanager
async def echo_with_admin() -> AsyncIterator[tuple[grpc.aio.Channel, FaultTable]]:
    """The echo service behind the library's layers and the fault layer, with the fault admin
    registered on the same protected server (the harder case: it passes the layers too)."""
    table = FaultTable()
    server = protect_server(
        grpc.aio.server(), [*server_interceptors("echo"), FaultLayer(table, "echo")]
    )
    server.add_generic_rpc_handlers((ECHO, fault_admin_handler(table)))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel, table
    finally:
        await server.stop(None)


async def _admin(channel: grpc.aio.Channel, method: str, body: Any) -> list[dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = await channel.unary_unary(ADMIN + method)(raw, timeout=5)
    rules: list[dict[str, Any]] = json.loads(answer)["rules"]
    return rules


async def _code(channel: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...] = ()) -> str:
    try:
        await channel.unary_unary(GET)(b"x", timeout=5, metadata=metadata)
    except grpc.aio.AioRpcError as err:
        return str(err.code().name)
    return "OK"


async def test_rules_set_over_the_wire_fail_the_calls_they_match_until_cleared() -> None:
    async with echo_with_admin() as (channel, table):
        rules = [
            {"method": GET, "code": "UNAVAILABLE", "header": {"x-chaos": "on"}},
            {"method": "*", "code": "RESOURCE_EXHAUSTED", "header": {"x-tenant": "t9"}},
        ]
        listed = await _admin(channel, "Set", {"rules": rules})
        assert [r["code"] for r in listed] == ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
        assert await _admin(channel, "List", {}) == listed

        assert await _code(channel) == "OK"
        assert await _code(channel, (("x-chaos", "on"),)) == "UNAVAILABLE"
        assert await _code(channel, (("x-tenant", "t9"),)) == "RESOURCE_EXHAUSTED"
        try:
            stream = channel.unary_stream(WATCH)(b"w", timeout=5, metadata=(("x-tenant", "t9"),))
            got = [m async for m in stream]
        except grpc.aio.AioRpcError as err:
            assert err.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "injected fault on /echo.v1.Echo/Watch" in (err.details() or "")
        else:
            raise AssertionError(f"the stream was not faulted: {got}")

        assert await _admin(channel, "Clear", b"") == []
        assert table.rules == ()
        assert await _code(channel, (("x-chaos", "on"),)) == "OK"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{not json", "request: not valid JSON"),
        (b"[1, 2]", "request: must be a JSON object"),
        (b'{"rules": {"code": "UNAVAILABLE"}}', "rules: must be a list"),
        (b'{"rules": [{"code": "UNAVAILABLE"}, {"rate": 2}]}', "rules[1].rate: 2 is not in [0, 1]"),
        (b'{"rules": [{"method": "*", "code": "NOT_A_CODE"}]}', "rules[0].code: 'NOT_A_CODE'"),
        (b'{"rules": [{"delay": 10}]}', "rules[0].delay: is not an option of FaultRule"),
    ],
)
async def test_a_bad_body_is_invalid_argument_naming_the_field_and_changes_nothing(
    body: bytes, words: str
) -> None:
    async with echo_with_admin() as (channel, table):
        before = await _admin(channel, "Set", {"rules": [{"method": GET, "delay_ms": 1}]})
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await channel.unary_unary(ADMIN + "Set")(body, timeout=5)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert words in (refused.value.details() or "")
        assert await _admin(channel, "List", {}) == before
        assert len(table.rules) == 1


async def test_a_rule_on_every_method_spares_the_admin_that_clears_it() -> None:
    async with echo_with_admin() as (channel, _):
        await _admin(channel, "Set", {"rules": [{"code": "UNAVAILABLE"}]})
        assert await _code(channel) == "UNAVAILABLE"
        assert await _admin(channel, "Clear", {}) == []
        assert await _code(channel) == "OK"
