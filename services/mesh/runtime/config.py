"""Service configuration from the environment: frozen, validated once at start-up.

The rules for each kind of value are `mesh.settings`'; the `<CALLEE>_ADDR` names come from the
topology at run time, so they are read with `settings.read` rather than declared as fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from mesh import settings
from mesh.config_error import ConfigError
from mesh.runtime.admin_auth import TOKEN_ENV, admin_token
from mesh.settings import Address, EnvSettings, Float, Int
from mesh.topology import ServiceSpec, edges_from, service

__all__ = ["ConfigError", "ServiceConfig"]

MAX_GRACE_S = 3600.0
MIN_MESSAGE_BYTES = 4 * 1024
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class _Env(EnvSettings):
    listen_addr: Annotated[str | None, Address] = Field(None, validation_alias="LISTEN_ADDR")
    admin_addr: Annotated[str | None, Address] = Field(None, validation_alias="ADMIN_ADDR")
    metrics_addr: Annotated[str | None, Address] = Field(None, validation_alias="METRICS_ADDR")
    policy: str | None = Field(None, validation_alias="MESH_POLICY")
    admin_token: str | None = Field(None, validation_alias=TOKEN_ENV)
    grace_s: Annotated[float, Float(0, MAX_GRACE_S)] = Field(
        5.0, validation_alias="SHUTDOWN_GRACE_S"
    )
    max_message_bytes: Annotated[int, Int(MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES)] = Field(
        1024 * 1024, validation_alias="MAX_MESSAGE_BYTES"
    )


@dataclass(frozen=True)
class ServiceConfig:
    """What every service reads from its environment."""

    name: str
    listen_addr: str
    """LISTEN_ADDR: the public gRPC port. Default 127.0.0.1:<topology port>."""
    admin_addr: str
    """ADMIN_ADDR: fault and policy admin gRPC; keep it on loopback. Default 127.0.0.1:<admin>."""
    metrics_addr: str
    """METRICS_ADDR: Prometheus /metrics over HTTP. Default 127.0.0.1:<metrics port>."""
    policy: str | None
    """MESH_POLICY: a preset name (unprotected, retry-only, full) or a YAML path. Default full."""
    grace_s: float
    """SHUTDOWN_GRACE_S: how long SIGTERM waits for in-flight calls to finish, 0..3600.
    Default 5 s."""
    max_message_bytes: int
    """MAX_MESSAGE_BYTES: largest request or response accepted, 4 KiB..256 MiB. Default 1 MiB:
    this API is small."""
    dependencies: Mapping[str, str]
    """<CALLEE>_ADDR for each edge leaving this service, e.g. PROFILE_ADDR: HOST:PORT, or the
    replicas' addresses separated by commas (mesh.resilience.channel balances over them)."""
    admin_token: str | None = field(default=None, repr=False)
    """MESH_ADMIN_TOKEN: the bearer token admin calls must carry (mesh.runtime.admin_auth),
    16..512 URL-safe characters. Default unset: the admin port is open to whoever reaches it."""

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServiceConfig:
        spec: ServiceSpec = service(name)
        env = settings.load(_Env, environ)
        deps = {
            e.dependency: settings.read(
                settings.env_or_os(environ),
                e.addr_env,
                settings.addresses,
                f"127.0.0.1:{service(e.dependency).port}",
            )
            for e in edges_from(name)
        }
        return cls(
            name=name,
            listen_addr=env.listen_addr or f"127.0.0.1:{spec.port}",
            admin_addr=env.admin_addr or f"127.0.0.1:{spec.admin_port}",
            metrics_addr=env.metrics_addr or f"127.0.0.1:{spec.metrics_port}",
            policy=env.policy,
            grace_s=env.grace_s,
            max_message_bytes=env.max_message_bytes,
            dependencies=deps,
            admin_token=admin_token(env.admin_token),
        )
