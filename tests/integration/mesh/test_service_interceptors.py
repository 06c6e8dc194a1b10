"""A service's own interceptors come from its Service: the gateway's API key check and rate
limit; every other service has none."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from grpc_aio_resilience.events import EventBus
from mesh.config_error import ConfigError
from mesh.faults.injection import FaultTable
from mesh.gateway.auth import AuthInterceptor
from mesh.gateway.ratelimit import RateLimitInterceptor
from mesh.gateway.servicer import build as build_gateway
from mesh.policy.loading import load_policy
from mesh.profile.servicer import build as build_profile
from mesh.runtime.config import ServiceConfig
from mesh.runtime.server import Runtime
from mesh.telemetry.metrics import MeshMetrics


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
