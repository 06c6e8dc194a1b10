"""Who gets in, how fast, and how big a message may be: the gateway's key and rate limit on real
grpc.aio servers, and message-size limits on every port of a real mesh."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from chaos.launch.mesh import Mesh
from mesh.config_error import ConfigError
from mesh.contracts.charge_ids import charge_id_for
from mesh.resilience.clock import FakeClock
from mesh.runtime.auth import UNAUTHENTICATED_DETAILS, ApiKeys, AuthInterceptor
from mesh.runtime.ratelimit import RateLimitInterceptor, RateLimitPolicy, TokenBucket
from mesh.v1 import gateway_pb2, payment_pb2
from tests.integration.hardening.hardening_helpers import assert_every_service_serving

SC = grpc.StatusCode
PING = "/test.Echo/Ping"
MAX_BYTES = 1024 * 1024
SIZE_OPTIONS = [
    ("grpc.max_send_message_length", 4 * MAX_BYTES),
    ("grpc.max_receive_message_length", 4 * MAX_BYTES),
]


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


@pytest.fixture
async def front_door() -> AsyncIterator[grpc.aio.Channel]:
    """An echo server behind the gateway's interceptors: keys k1, k2; 2 calls/s, burst 3."""
    keys = ApiKeys.from_env({"MESH_API_KEYS": "k1-secret, k2-secret"})
    server = grpc.aio.server(
        interceptors=[
            AuthInterceptor(keys),
            RateLimitInterceptor(RateLimitPolicy(rate_per_s=2.0, burst=3.0), keys),
        ]
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "test.Echo", {"Ping": grpc.unary_unary_rpc_method_handler(_echo)}
            ),
        )
    )
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    yield channel
    await channel.close()
    await server.stop(0)


async def _ping(channel: grpc.aio.Channel, md: tuple[tuple[str, str], ...] = ()) -> grpc.aio.Call:
    return await channel.unary_unary(PING)(b"hi", timeout=2, metadata=md)


@pytest.mark.parametrize(
    "md",
    [
        (),
        bearer("wrong"),
        bearer(""),
        (("authorization", "k1-secret"),),
        bearer("k1-secret-and-more"),
        bearer("K1-SECRET"),
    ],
)
async def test_missing_or_wrong_key_is_refused_alike(front_door, md) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await _ping(front_door, md)
    assert info.value.code() == SC.UNAUTHENTICATED
    assert info.value.details() == UNAUTHENTICATED_DETAILS


async def test_every_configured_key_gets_in_and_health_needs_none(front_door) -> None:  # type: ignore[no-untyped-def]
    assert await _ping(front_door, bearer("k1-secret")) == b"hi"
    assert await _ping(front_door, (("authorization", "bearer k2-secret"),)) == b"hi"
    reply = await health_pb2_grpc.HealthStub(front_door).Check(
        health_pb2.HealthCheckRequest(), timeout=2
    )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_rate_limit_is_per_key_with_pushback(front_door) -> None:  # type: ignore[no-untyped-def]
    codes, pushbacks = [], []
    for _ in range(5):
        try:
            await _ping(front_door, bearer("k1-secret"))
            codes.append("OK")
        except grpc.aio.AioRpcError as err:
            codes.append(err.code().name)
            pushbacks += [
                int(v) for k, v in err.trailing_metadata() if k == "grpc-retry-pushback-ms"
            ]
    assert codes[:3] == ["OK"] * 3 and "RESOURCE_EXHAUSTED" in codes[3:]
    assert pushbacks and all(1 <= p <= 500 for p in pushbacks)
    assert await _ping(front_door, bearer("k2-secret")) == b"hi"  # its own bucket


def test_token_bucket_refills_at_its_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate_per_s=10.0, burst=2.0, clock=clock)
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() == pytest.approx(0.1)
    clock.advance(0.05)
    assert bucket.take() == pytest.approx(0.05)
    clock.advance(0.06)
    assert bucket.take() == 0.0


def test_keys_come_from_env_or_file(tmp_path: Path) -> None:
    keyfile = tmp_path / "keys"
    keyfile.write_text("# rotated 2024\nfile-key-1\n\nfile-key-2\n")
    keys = ApiKeys.from_env({"MESH_API_KEYS_FILE": str(keyfile), "MESH_API_KEYS": "env-key"})
    assert keys.match(b"file-key-2") == b"file-key-2"
    assert keys.match(b"env-key") == b"env-key"
    assert keys.match(b"# rotated 2024") is None
    assert not ApiKeys.from_env({"MESH_AUTH": "off"}).enabled
    with pytest.raises(ConfigError, match="MESH_API_KEYS"):
        ApiKeys.from_env({})


def test_gateway_without_keys_refuses_to_start() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
    env.update(
        LISTEN_ADDR="127.0.0.1:0",
        ADMIN_ADDR="127.0.0.1:0",
        METRICS_ADDR="127.0.0.1:0",
        MESH_TRACING="0",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mesh.gateway"], env=env, capture_output=True, text=True, timeout=30
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
                    oversized, timeout=5, metadata=bearer(mesh.state.api_key or "")
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
    md = bearer(mesh.state.api_key or "")
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
