"""A service's Runtime as serve() would give it to the service's build, without serving: for
tests that build servicers or edges in process (no listener, nothing exported)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from grpc_aio_resilience.events import EventBus
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.runtime.server import Runtime
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics


def runtime_for(name: str, env: Mapping[str, str] | None = None, policy: str = "full") -> Runtime:
    """Service `name`'s Runtime from `env` (nothing else of the process's environment)."""
    environ = dict(env or {})
    return Runtime(
        ServiceConfig.from_env(name, environ),
        load_policy(policy, environ),
        EventBus(),
        FaultTable(),
        MeshMetrics(CollectorRegistry(), service=name),
        environ=environ,
    )
