"""A service's own interceptors come from its Service: the gateway's API key check and rate
limit; every other service has none."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from grpc_aio_resilience.events import EventBus
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.gateway.auth import AuthInterceptor
from grpc_resilience_mesh.services.gateway.ratelimit import RateLimitInterceptor
from grpc_resilience_mesh.services.gateway.servicer import build as build_gateway
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.profile.servicer import build as build_profile
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.runtime.server import Runtime
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics


def runtime(name: str, env: dict[str, str]) -> Runtime:
    return Runtime(
        ServiceConfig.from_env(name, env),
        load_policy("full", env),
        EventBus(),
        FaultTable(),
        MeshMetrics(CollectorRegistry(), service=name),
        environ=env,
    )


async def close(rt: Runtime) -> None:
    await rt.edges.close()


async def test_the_gateway_brings_its_key_check_and_rate_limit() -> None:
    rt = runtime("gateway", {"MESH_API_KEYS": "k1"})
    service = await build_gateway(rt)
    try:
        assert [type(i) for i in service.front] == [AuthInterceptor]
        assert [type(i) for i in service.admission] == [RateLimitInterceptor]
    finally:
        assert service.close is not None
        await service.close()
        await close(rt)


async def test_the_gateway_without_keys_refuses_to_start() -> None:
    rt = runtime("gateway", {})
    with pytest.raises(ConfigError, match="MESH_API_KEYS"):
        await build_gateway(rt)
    await close(rt)


async def test_other_services_bring_none() -> None:
    rt = runtime("profile", {})
    service = await build_profile(rt)
    assert (tuple(service.front), tuple(service.admission)) == ((), ())
    await close(rt)
