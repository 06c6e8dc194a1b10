"""SIGTERM during load: the gateway finishes every call it accepted and refuses new ones."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid

import grpc
import grpc.aio

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    gateway_pb2,
    gateway_pb2_grpc,
    payment_pb2,
)

IN_FLIGHT = 24
HANDLER_DELAY_S = 1.0
"""Injected in the gateway itself (every method): its handlers are slow, its dependencies not."""


async def _call(stub: gateway_pb2_grpc.GatewayStub, md: tuple[tuple[str, str], ...], n: int) -> str:
    """GetHome, or a checkout that must come back SUCCEEDED (money accepted is money charged)."""
    try:
        if n % 2:
            home = await stub.GetHome(
                gateway_pb2.GetHomeRequest(user_id="u-0007"), timeout=10, metadata=md
            )
            return "OK" if home.profile.user_id == "u-0007" else "WRONG"
        out = await stub.Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0007",
                amount_cents=100 + n,
                currency="USD",
                idempotency_key=f"drain-{uuid.uuid4().hex}",
            ),
            timeout=10,
            metadata=md,
        )
        return "OK" if out.status == payment_pb2.CHARGE_STATUS_SUCCEEDED else "NOT_CHARGED"
    except grpc.aio.AioRpcError as err:
        return str(err.code().name)


async def test_sigterm_drains_accepted_calls_and_refuses_new_ones(mesh: Mesh) -> None:
    state = mesh.state
    assert state is not None and state.api_key
    md = (("authorization", f"Bearer {state.api_key}"),)
    async with grpc.aio.insecure_channel(state.services["gateway"]["admin"]) as admin:
        await admin_pb2_grpc.FaultAdminStub(admin).SetFault(
            admin_pb2.SetFaultRequest(fault=admin_pb2.Fault(method="*", delay_s=HANDLER_DELAY_S)),
            timeout=2,
            metadata=admin_metadata(state.admin_token),
        )
    gateway = next(p for p in mesh.procs if p.name == "gateway")
    async with grpc.aio.insecure_channel(state.gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        await channel.channel_ready()
        accepted = [asyncio.create_task(_call(stub, md, n)) for n in range(IN_FLIGHT)]
        await asyncio.sleep(HANDLER_DELAY_S / 3)  # all accepted, none finished
        gateway.popen.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.2)
        started = time.monotonic()
        late = await _call(stub, md, 1)
        late_took_s = time.monotonic() - started
        results = await asyncio.gather(*accepted)
    assert results == ["OK"] * IN_FLIGHT
    assert late == "UNAVAILABLE" and late_took_s < 2.0
    assert await asyncio.to_thread(gateway.popen.wait, 10) == 0  # a clean exit after draining
    mesh.restart_service("gateway")  # leave the mesh whole for the fixture's stop
