"""The server's layers run as one chain answer every call as the same layers nested.

The gateway's full stack (decoding, tracing, API key, call counting, rate limit, shedding,
faults) serves one script of calls three times: as grpc.aio nests separate interceptors, as
one ServerChain interceptor, and as `serve()` mounts the chain (`protect_server`, no
interceptor API). Codes, details, which calls were counted and the rate limiter's
tokens must come out the same, and as the declared order says: a call without a key is
refused before its payload is decoded, counted or rate-limited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.server_layer import ServerLayer
from grpc_aio_resilience.server_mount import protect_server
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.gateway.auth import ApiKeys, AuthInterceptor
from grpc_resilience_mesh.services.gateway.ratelimit import RateLimitInterceptor, RateLimitPolicy
from grpc_resilience_mesh.services.runtime.server_chain import ServerChain, server_layers
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.telemetry.tracing import (
    MeshTracing,
    server_tracing,
    setup_tracing,
)
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, serving
from tests.support.fake_clock import FakeClock
from tests.support.front_door import bearer

GET = "/mesh.v1.ProfileService/GetProfile"
REQUEST = profile_pb2.GetProfileRequest(user_id="u1").SerializeToString()
KEY = bearer("k1")
SCRIPT: list[tuple[str, str, bytes, tuple[tuple[str, str], ...]]] = [
    ("no key", GET, REQUEST, ()),
    ("no key, corrupt payload", GET, b"\xff\xff", ()),
    ("ok 1", GET, REQUEST, KEY),
    ("corrupt payload", GET, b"\xff\xff", KEY),
    ("unknown method", "/mesh.v1.ProfileService/Nope", REQUEST, KEY),
    ("no key, unknown method", "/mesh.v1.ProfileService/Nope", REQUEST, ()),
    ("ok 2", GET, REQUEST, KEY),
    ("over the rate", GET, REQUEST, KEY),
]


def _layers(tmp_path: Path, registry: CollectorRegistry) -> list[ServerLayer]:
    keys = ApiKeys.from_env({"MESH_API_KEYS": "k1"})
    bus = EventBus()
    bus.subscribe(MeshMetrics(registry, service="gateway").listener)
    provider = setup_tracing("gateway", {"MESH_TRACES_DIR": str(tmp_path)})
    assert provider is not None
    tracing = MeshTracing(provider)
    bus.subscribe(tracing.listener)
    return server_layers(
        "gateway",
        ServerPolicy(),
        bus,
        FaultTable(),
        tracing=server_tracing(tracing),
        front=[AuthInterceptor(keys)],
        # Three tokens and a clock that never moves: the third decoded call is refused.
        admission=[RateLimitInterceptor(RateLimitPolicy(1.0, 3.0), keys, FakeClock())],
    )


def _register(server: grpc.aio.Server) -> None:
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(ProfileFake(), server)
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)


async def _run_script(target: str) -> list[tuple[str, str, str]]:
    outcomes = []
    async with grpc.aio.insecure_channel(target) as channel:
        for label, method, payload, metadata in SCRIPT:
            call = channel.unary_unary(method)
            try:
                await call(payload, timeout=5, metadata=metadata)
                outcomes.append((label, "OK", ""))
            except grpc.aio.AioRpcError as err:
                outcomes.append((label, err.code().name, err.details() or ""))
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        outcomes.append(
            ("health, no key", health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status), "")
        )
    return outcomes


def _counted(registry: CollectorRegistry) -> dict[str, float]:
    found = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == "mesh_server_calls_total":
                found[f"{sample.labels['method']} {sample.labels['code']}"] = sample.value
    return found


def _mounted(
    mount: str, layers: list[ServerLayer]
) -> tuple[Sequence[grpc.aio.ServerInterceptor], Callable[[grpc.aio.Server], None]]:
    """The interceptors for grpc.aio.server and how to register the services, for `mount`."""
    if mount == "protected":
        return (), lambda server: _register(protect_server(server, layers))
    return (layers if mount == "nested" else [ServerChain(layers)]), _register


@pytest.mark.parametrize("mount", ["nested", "chained", "protected"])
async def test_the_chain_answers_as_the_nested_layers(tmp_path: Path, mount: str) -> None:
    registry = CollectorRegistry()
    interceptors, register = _mounted(mount, _layers(tmp_path, registry))
    async with serving(register, interceptors) as target:
        outcomes = await _run_script(target)

    codes = [(label, code) for label, code, _ in outcomes]
    assert codes == [
        ("no key", "UNAUTHENTICATED"),
        ("no key, corrupt payload", "UNAUTHENTICATED"),  # refused before it is decoded
        ("ok 1", "OK"),
        ("corrupt payload", "INVALID_ARGUMENT"),
        ("unknown method", "UNIMPLEMENTED"),
        ("no key, unknown method", "UNAUTHENTICATED"),
        ("ok 2", "OK"),
        ("over the rate", "RESOURCE_EXHAUSTED"),
        ("health, no key", "SERVING"),
    ]
    # Counted: what got past the key check to a known method, health included. The corrupt
    # payload is answered by the decoding guard, outside the counting, but it took a token:
    # the rate limit picks the handler before any payload is decoded.
    assert _counted(registry) == {
        f"{GET} OK": 2.0,
        f"{GET} RESOURCE_EXHAUSTED": 1.0,
        "/grpc.health.v1.Health/Check OK": 1.0,
    }
    assert "not a valid encoding of the GetProfile request" in outcomes[3][2]
