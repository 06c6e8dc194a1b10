"""Who gets in, how fast, and how big a message may be: the gateway's key and rate limit on real
grpc.aio servers, and message-size limits on every port of a real mesh."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.gateway.auth import (
    UNAUTHENTICATED_DETAILS,
    ApiKeys,
    AuthInterceptor,
)
from grpc_resilience_mesh.services.gateway.ratelimit import (
    RateLimitInterceptor,
    RateLimitPolicy,
    TokenBucket,
)
from tests.support.fake_clock import FakeClock
from tests.support.front_door import bearer

SC = grpc.StatusCode
PING = "/test.Echo/Ping"


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
