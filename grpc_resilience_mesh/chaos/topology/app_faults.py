"""App-level faults on a topology's service: the library's fault admin
(`grpc_aio_resilience.fault_admin_handler`), called at the address the service serves it on,
with the JSON bodies it speaks. A rule is a mapping of `grpc_aio_resilience.FaultRule`'s fields:

    await set_faults("127.0.0.1:26010", [{"method": "/chain.v1.Back/Get", "code": "UNAVAILABLE",
                                          "rate": 0.5, "header": {"x-chaos": "on"}}])
    await clear_faults("127.0.0.1:26010")

Every call answers with the rules in force after it, as plain data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import FAULT_ADMIN_PREFIX, FaultRule, OptionError, from_dict

DEFAULT_TIMEOUT_S = 5.0


class AppFaultError(Exception):
    """A fault admin could not be reached, or refused what it was sent; the message says which
    service address and why."""


def check_rules(rules: Sequence[Mapping[str, Any]]) -> None:
    """Raises AppFaultError naming the rule and field the fault admin would refuse: what a dry
    run checks before anything is injected."""
    for i, rule in enumerate(rules):
        try:
            from_dict(FaultRule, rule, path=f"rules[{i}]")
        except OptionError as err:
            raise AppFaultError(f"app fault: {err}") from None


async def set_faults(
    addr: str, rules: Sequence[Mapping[str, Any]], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[dict[str, Any]]:
    """Replaces every rule of the service at `addr` with `rules`; the rules now in force."""
    return await _call(addr, "Set", {"rules": [dict(rule) for rule in rules]}, timeout_s)


async def clear_faults(addr: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    """Removes every rule of the service at `addr` (the rollback); the rules now in force."""
    return await _call(addr, "Clear", {}, timeout_s)


async def list_faults(addr: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    """The rules in force at `addr`, in the order they are matched."""
    return await _call(addr, "List", {}, timeout_s)


async def _call(
    addr: str, method: str, body: dict[str, Any], timeout_s: float
) -> list[dict[str, Any]]:
    async with grpc.aio.insecure_channel(addr) as channel:
        call = channel.unary_unary(f"{FAULT_ADMIN_PREFIX}{method}")
        try:
            answer = await call(json.dumps(body).encode(), timeout=timeout_s)
        except grpc.aio.AioRpcError as err:
            raise AppFaultError(_reason(addr, method, err)) from None
    try:
        rules = json.loads(answer)["rules"]
    except (ValueError, KeyError, TypeError):
        raise AppFaultError(f"fault admin at {addr}: {method} answered no rule list") from None
    if not isinstance(rules, list):
        raise AppFaultError(f"fault admin at {addr}: {method} answered no rule list")
    return rules


def _reason(addr: str, method: str, err: grpc.aio.AioRpcError) -> str:
    code = err.code()
    if code is grpc.StatusCode.UNAVAILABLE:
        return f"no fault admin at {addr}: does the service mount fault_admin_handler?"
    if code is grpc.StatusCode.UNIMPLEMENTED:
        return (
            f"{addr} serves no fault admin ({method} is UNIMPLEMENTED): "
            "does the service mount fault_admin_handler there?"
        )
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return f"fault admin at {addr} refused the rules: {err.details()}"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"fault admin at {addr}: no answer to {method} in time"
    return f"fault admin at {addr}: {method} failed {code.name}: {err.details()}"
