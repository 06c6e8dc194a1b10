"""The fault admin: a `FaultTable` edited over gRPC with JSON bodies, so a chaos runner needs no
generated stubs and the library no protobuf schema of its own.

    /grpc_aio_resilience.FaultAdmin/Set    {"rules": [{"method": "*", "code": "UNAVAILABLE"}]}
    /grpc_aio_resilience.FaultAdmin/Clear  {}
    /grpc_aio_resilience.FaultAdmin/List   {}

Each answers {"rules": [...]}, the table as it now is. Set replaces every rule, so sending the
same rules twice leaves what sending them once leaves. A body that is not JSON, or a rule that
is not valid, fails INVALID_ARGUMENT naming the field (`rules[0].rate: 2 is not in [0, 1]`)
and leaves the table as it was.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.faults import FAULT_ADMIN_PREFIX, FaultRule, FaultTable
from grpc_aio_resilience.options import OptionError, from_dict, to_dict

SERVICE = FAULT_ADMIN_PREFIX.strip("/")
MAX_BODY_BYTES = 64 * 1024
"""A request body past this is refused before it is parsed."""

Method = Callable[[bytes, grpc.aio.ServicerContext], Awaitable[bytes]]


def fault_admin_handler(table: FaultTable) -> grpc.GenericRpcHandler:
    """The fault admin of `table`, for `server.add_generic_rpc_handlers((handler,))`. Serve it
    where only the runner reaches it (a loopback port of its own is best): whoever can call it
    can fail every call the server takes."""
    # Coroutine functions (partial keeps them so): grpc.aio runs any other behaviour in a thread.
    methods: dict[str, Method] = {
        "Set": partial(_set, table),
        "Clear": partial(_clear, table),
        "List": partial(_list, table),
    }
    return grpc.method_handlers_generic_handler(
        SERVICE, {name: grpc.unary_unary_rpc_method_handler(m) for name, m in methods.items()}
    )


async def _set(table: FaultTable, body: bytes, context: grpc.aio.ServicerContext) -> bytes:
    request = await _request(body, context)
    try:
        rules = parse_rules(request.get("rules"))
        table.set(rules)
    except OptionError as err:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
    return _listing(table)


async def _clear(table: FaultTable, body: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await _request(body, context)
    table.clear()
    return _listing(table)


async def _list(table: FaultTable, body: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await _request(body, context)
    return _listing(table)


def parse_rules(raw: Any) -> list[FaultRule]:
    """Rules from plain data (a list of objects with FaultRule's fields); an OptionError names
    the rule and its field."""
    if not isinstance(raw, list):
        raise OptionError("rules", "must be a list of rule objects")
    return [from_dict(FaultRule, item, path=f"rules[{i}]") for i, item in enumerate(raw)]


def rules_json(rules: list[FaultRule]) -> dict[str, Any]:
    """The body every method answers with: {"rules": [...]}, each rule as plain data."""
    return {"rules": [to_dict(rule) for rule in rules]}


def _listing(table: FaultTable) -> bytes:
    return json.dumps(rules_json(table.list()), separators=(",", ":")).encode()


async def _request(body: bytes, context: grpc.aio.ServicerContext) -> dict[str, Any]:
    """The request as a JSON object (an empty body is {}), or the call ends INVALID_ARGUMENT."""
    if not body:
        return {}
    if len(body) > MAX_BODY_BYTES:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT, f"request: more than {MAX_BODY_BYTES} bytes"
        )
    try:
        parsed: Any = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request: not valid JSON: {err}")
    if not isinstance(parsed, dict):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "request: must be a JSON object")
    request: dict[str, Any] = parsed
    return request


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a rule may have")
