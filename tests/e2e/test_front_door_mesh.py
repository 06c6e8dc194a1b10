"""The front door on the real mesh, as processes: a gateway without keys refuses to start,
the launcher's key gets in, oversized messages are refused on every port and leave it healthy,
and GetCharge validates its input."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import grpc
import grpc.aio
import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.contracts.charge_ids import charge_id_for
from grpc_resilience_mesh.services.v1 import gateway_pb2, payment_pb2
from tests.e2e.hardening_helpers import assert_every_service_serving
from tests.support.front_door import MAX_BYTES, SIZE_OPTIONS, bearer

SC = grpc.StatusCode


def test_gateway_without_keys_refuses_to_start() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
    env.update(
        LISTEN_ADDR="127.0.0.1:0",
        ADMIN_ADDR="127.0.0.1:0",
        METRICS_ADDR="127.0.0.1:0",
        MESH_TRACING="0",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "grpc_resilience_mesh.services.gateway"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode != 0
    assert "MESH_API_KEYS" in proc.stderr and "MESH_AUTH=off" in proc.stderr


# On the real mesh: the launcher's key, and oversized messages on every port.


def test_mesh_gateway_wants_the_launchers_key(mesh: Mesh) -> None:
    assert mesh.state is not None and mesh.state.api_key
    with grpc.insecure_channel(mesh.state.gateway) as channel:
        home = channel.unary_unary("/mesh.v1.Gateway/GetHome")
        request = gateway_pb2.GetHomeRequest(user_id="u-0001").SerializeToString()
        with pytest.raises(grpc.RpcError) as info:
            home(request, timeout=5)
        assert info.value.code() == SC.UNAUTHENTICATED
        assert home(request, timeout=5, metadata=bearer(mesh.state.api_key))


def _credential(mesh: Mesh, service: str) -> tuple[tuple[str, str], ...]:
    """The gateway's API key, or the mesh's internal token that the services behind it want."""
    assert mesh.state is not None
    return bearer((mesh.state.api_key if service == "gateway" else mesh.state.internal_token) or "")


def _ports(mesh: Mesh) -> list[tuple[str, str, str]]:
    assert mesh.state is not None
    methods = {
        "gateway": "/mesh.v1.Gateway/GetHome",
        "profile": "/mesh.v1.ProfileService/GetProfile",
        "recommendation": "/mesh.v1.RecommendationService/Recommend",
        "payment": "/mesh.v1.PaymentService/Charge",
    }
    services = {name: addrs for name, addrs in mesh.state.services.items() if name in methods}
    ports = [(name, addrs["listen"], methods[name]) for name, addrs in services.items()]
    ports += [
        (f"{name} admin", addrs["admin"], "/mesh.v1.FaultAdmin/SetFault")
        for name, addrs in services.items()
    ]
    return ports


def test_oversized_requests_are_refused_and_every_port_stays_healthy(mesh: Mesh) -> None:
    assert mesh.state is not None
    oversized = b"\x0a" + b"\xff\xff\x7f" + b"x" * (2 * MAX_BYTES)  # a 2 MiB string field
    for name, addr, method in _ports(mesh):
        with grpc.insecure_channel(addr, options=SIZE_OPTIONS) as channel:
            with pytest.raises(grpc.RpcError) as info:
                channel.unary_unary(method)(
                    oversized, timeout=5, metadata=_credential(mesh, name.split()[0])
                )
            assert info.value.code() == SC.RESOURCE_EXHAUSTED, (name, info.value.details())
    assert_every_service_serving(mesh)


# Validation matches exactly: a trailing newline or non-ASCII digits never make a new key or id.


def _call(
    channel: grpc.Channel, method: str, request: bytes, md: tuple[tuple[str, str], ...]
) -> Any:
    try:
        return channel.unary_unary(method)(request, timeout=5, metadata=md)
    except grpc.RpcError as err:
        return err.code()


def test_key_and_key_newline_are_not_two_charges(mesh: Mesh) -> None:
    assert mesh.state is not None
    md = bearer(mesh.state.api_key or "")
    key = f"exact-{os.getpid()}-{time.monotonic_ns()}"
    with grpc.insecure_channel(mesh.state.gateway) as channel:
        checkout = "/mesh.v1.Gateway/Checkout"

        def charge(idem: str, user: str = "u-0002") -> Any:
            request = gateway_pb2.CheckoutRequest(
                user_id=user, amount_cents=100, currency="USD", idempotency_key=idem
            )
            return _call(channel, checkout, request.SerializeToString(), md)

        first = charge(key)
        assert isinstance(first, bytes), first
        reply = gateway_pb2.CheckoutResponse.FromString(first)
        assert reply.status == payment_pb2.CHARGE_STATUS_SUCCEEDED
        assert charge(key + "\n") == SC.INVALID_ARGUMENT
        assert charge(key + "-2", user="u-0002\n") == SC.INVALID_ARGUMENT
        assert charge(key + "-3", user="u-\u0661\u0662\u0663\u0664") == SC.INVALID_ARGUMENT
        home = gateway_pb2.GetHomeRequest(user_id="u-0001\n").SerializeToString()
        assert _call(channel, "/mesh.v1.Gateway/GetHome", home, md) == SC.INVALID_ARGUMENT


@pytest.mark.parametrize("service", ["gateway", "payment"])
def test_get_charge_validates_its_input(mesh: Mesh, service: str) -> None:
    assert mesh.state is not None
    md = _credential(mesh, service)
    addr = mesh.state.services[service]["listen"]
    method = {
        "gateway": "/mesh.v1.Gateway/GetCharge",
        "payment": "/mesh.v1.PaymentService/GetCharge",
    }[service]
    bad = [
        payment_pb2.GetChargeRequest(),
        payment_pb2.GetChargeRequest(charge_id="ch_" + "0" * 24 + "\n"),
        payment_pb2.GetChargeRequest(charge_id="x" * 5000),
        payment_pb2.GetChargeRequest(idempotency_key="k" * 20 + "\n"),
        payment_pb2.GetChargeRequest(idempotency_key="short"),
        payment_pb2.GetChargeRequest(
            charge_id=charge_id_for("one-key-01"), idempotency_key="other-key-01"
        ),
    ]
    with grpc.insecure_channel(addr) as channel:
        for request in bad:
            assert _call(channel, method, request.SerializeToString(), md) == (
                SC.INVALID_ARGUMENT
            ), request
        unknown = payment_pb2.GetChargeRequest(charge_id=charge_id_for("never-charged-01"))
        assert _call(channel, method, unknown.SerializeToString(), md) == SC.NOT_FOUND
