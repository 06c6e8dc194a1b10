"""The runner's side of app-level faults (chaos.topology.app_faults) against real grpc.aio servers
on loopback: rules set, listed and cleared through a service's fault admin take effect on its
calls, and each way of failing says which address and what to fix."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience import FaultLayer, FaultTable, fault_admin_handler
from grpc_resilience_mesh.chaos.topology.app_faults import (
    AppFaultError,
    check_rules,
    clear_faults,
    list_faults,
    set_faults,
)
from grpc_resilience_mesh.launch.ports import free_port

GET = "/echo.v1.Echo/Get"


async def _get(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


ECHO = grpc.method_handlers_generic_handler(
    "echo.v1.Echo", {"Get": grpc.unary_unary_rpc_method_handler(_get)}
)


@asynccontextmanager
async def service(with_admin: bool = True) -> AsyncIterator[tuple[str, str]]:
    """(service address, admin address): the echo service behind a fault layer, and its fault
    admin on a loopback server of its own (or, without it, a server that serves no admin)."""
    table = FaultTable()
    app = grpc.aio.server(interceptors=[FaultLayer(table, "echo")])
    app.add_generic_rpc_handlers((ECHO,))
    admin = grpc.aio.server()
    admin.add_generic_rpc_handlers((fault_admin_handler(table),) if with_admin else (ECHO,))
    app_port = app.add_insecure_port("127.0.0.1:0")
    admin_port = admin.add_insecure_port("127.0.0.1:0")
    await app.start()
    await admin.start()
    try:
        yield f"127.0.0.1:{app_port}", f"127.0.0.1:{admin_port}"
    finally:
        await admin.stop(None)
        await app.stop(None)


async def _code(addr: str, metadata: tuple[tuple[str, str], ...] = ()) -> str:
    async with grpc.aio.insecure_channel(addr) as channel:
        try:
            await channel.unary_unary(GET)(b"x", timeout=5, metadata=metadata)
        except grpc.aio.AioRpcError as err:
            return str(err.code().name)
    return "OK"


async def test_faults_set_through_the_admin_hit_the_matching_calls_until_cleared() -> None:
    async with service() as (addr, admin):
        rule = {"method": "echo.v1.Echo/Get", "code": "unavailable", "header": {"x-chaos": "on"}}
        listed = await set_faults(admin, [rule])
        expected = [
            {"method": GET, "code": "UNAVAILABLE", "delay_ms": 0, "rate": 1.0,
             "header": {"x-chaos": "on"}},
        ]  # fmt: skip
        assert listed == expected
        assert await list_faults(admin) == expected
        assert await _code(addr, (("x-chaos", "on"),)) == "UNAVAILABLE"
        assert await _code(addr) == "OK"
        assert await clear_faults(admin) == []
        assert await _code(addr, (("x-chaos", "on"),)) == "OK"


async def test_no_server_at_the_address_names_it_and_the_handler_to_mount() -> None:
    addr = f"127.0.0.1:{free_port()}"
    with pytest.raises(AppFaultError) as failed:
        await clear_faults(addr, timeout_s=2.0)
    assert str(failed.value) == (
        f"no fault admin at {addr}: does the service mount fault_admin_handler?"
    )


async def test_a_server_without_the_admin_and_a_refused_rule_say_so() -> None:
    async with service(with_admin=False) as (_, admin):
        with pytest.raises(AppFaultError, match=r"serves no fault admin \(Set is UNIMPLEMENTED\)"):
            await set_faults(admin, [{"code": "INTERNAL"}])
    async with service() as (_, admin):
        with pytest.raises(AppFaultError) as refused:
            await set_faults(admin, [{"code": "INTERNAL", "rate": 3}])
        assert str(refused.value) == (
            f"fault admin at {admin} refused the rules: rules[0].rate: 3 is not in [0, 1]"
        )
        assert await list_faults(admin) == []


def test_rules_are_checked_before_anything_is_sent() -> None:
    check_rules([{"method": GET, "delay_ms": 300, "rate": 0.5}])
    with pytest.raises(AppFaultError, match=r"app fault: rules\[1\]\.header: 'x' is not a mapping"):
        check_rules([{"code": "INTERNAL"}, {"code": "INTERNAL", "header": "x"}])
