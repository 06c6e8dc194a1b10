"""Service configuration from the environment: frozen, validated once at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mesh.runtime.topology import ServiceSpec, service


class ConfigError(ValueError):
    """A variable is missing or malformed; the message names it."""


def _ascii_digits(text: str) -> bool:
    """0-9 only: str.isdigit() also passes '²' (int() then raises) and other scripts' digits."""
    return text.isascii() and text.isdigit()


def _addr(environ: Mapping[str, str], var: str, default: str) -> str:
    value = environ.get(var, default).strip()
    host, sep, port = value.rpartition(":")
    if not sep or not host or not _ascii_digits(port) or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{var}={value!r} is not HOST:PORT (e.g. 127.0.0.1:50052)")
    return value


def _float(environ: Mapping[str, str], var: str, default: float) -> float:
    raw = environ.get(var)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{var}={raw!r} is not a number") from None
    if value < 0:
        raise ConfigError(f"{var}={raw!r} must be >= 0")
    return value


def _int(environ: Mapping[str, str], var: str, default: int) -> int:
    raw = environ.get(var)
    if raw is None:
        return default
    if not _ascii_digits(raw.strip()):
        raise ConfigError(f"{var}={raw!r} is not a non-negative integer")
    return int(raw)


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
    """SHUTDOWN_GRACE_S: how long SIGTERM waits for in-flight calls to finish. Default 5 s."""
    max_message_bytes: int
    """MAX_MESSAGE_BYTES: largest request or response accepted. Default 1 MiB: this API is small."""
    dependencies: Mapping[str, str]
    """<CALLEE>_ADDR for each edge leaving this service, e.g. PROFILE_ADDR."""

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServiceConfig:
        from mesh.runtime.topology import edges_from

        env = os.environ if environ is None else environ
        spec: ServiceSpec = service(name)
        deps = {
            e.callee: _addr(env, e.addr_env, f"127.0.0.1:{service(e.callee).port}")
            for e in edges_from(name)
        }
        return cls(
            name=name,
            listen_addr=_addr(env, "LISTEN_ADDR", f"127.0.0.1:{spec.port}"),
            admin_addr=_addr(env, "ADMIN_ADDR", f"127.0.0.1:{spec.admin_port}"),
            metrics_addr=_addr(env, "METRICS_ADDR", f"127.0.0.1:{spec.metrics_port}"),
            policy=env.get("MESH_POLICY") or None,
            grace_s=_float(env, "SHUTDOWN_GRACE_S", 5.0),
            max_message_bytes=_int(env, "MAX_MESSAGE_BYTES", 1024 * 1024),
            dependencies=deps,
        )
