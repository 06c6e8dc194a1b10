"""Service configuration from the environment: frozen, validated once at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mesh.config_error import ConfigError
from mesh.topology import ServiceSpec, service

__all__ = ["ConfigError", "ServiceConfig"]


def _ascii_digits(text: str) -> bool:
    """0-9 only: str.isdigit() also passes '²' (int() then raises) and other scripts' digits."""
    return text.isascii() and text.isdigit()


def _addr(environ: Mapping[str, str], var: str, default: str) -> str:
    value = environ.get(var, default).strip()
    host, sep, port = value.rpartition(":")
    if not sep or not host or not _ascii_digits(port) or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{var}={_shown(value)} is not HOST:PORT (e.g. 127.0.0.1:50052)")
    return value


def _shown(raw: str) -> str:
    """A variable's value as an error quotes it: short, one line."""
    flat = " ".join(raw.split())
    return repr(flat if len(flat) <= 40 else flat[:37] + "...")


def _float(environ: Mapping[str, str], var: str, default: float, maximum: float) -> float:
    raw = environ.get(var)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{var}={_shown(raw)} is not a number") from None
    if not 0 <= value <= maximum:  # NaN fails both comparisons
        raise ConfigError(f"{var}={_shown(raw)} must be a number within 0..{maximum:g}")
    return value


def _int(environ: Mapping[str, str], var: str, default: int, lo: int, hi: int) -> int:
    raw = environ.get(var)
    if raw is None:
        return default
    digits = raw.strip()
    if not _ascii_digits(digits) or len(digits) > 18 or not lo <= int(digits) <= hi:
        raise ConfigError(f"{var}={_shown(raw)} is not an integer within {lo}..{hi}")
    return int(digits)


MAX_GRACE_S = 3600.0
MIN_MESSAGE_BYTES = 4 * 1024
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


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
    """<CALLEE>_ADDR for each edge leaving this service, e.g. PROFILE_ADDR."""

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServiceConfig:
        from mesh.topology import edges_from

        env = os.environ if environ is None else environ
        spec: ServiceSpec = service(name)
        deps = {
            e.dependency: _addr(env, e.addr_env, f"127.0.0.1:{service(e.dependency).port}")
            for e in edges_from(name)
        }
        return cls(
            name=name,
            listen_addr=_addr(env, "LISTEN_ADDR", f"127.0.0.1:{spec.port}"),
            admin_addr=_addr(env, "ADMIN_ADDR", f"127.0.0.1:{spec.admin_port}"),
            metrics_addr=_addr(env, "METRICS_ADDR", f"127.0.0.1:{spec.metrics_port}"),
            policy=env.get("MESH_POLICY") or None,
            grace_s=_float(env, "SHUTDOWN_GRACE_S", 5.0, MAX_GRACE_S),
            max_message_bytes=_int(
                env, "MAX_MESSAGE_BYTES", 1024 * 1024, MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES
            ),
            dependencies=deps,
        )
