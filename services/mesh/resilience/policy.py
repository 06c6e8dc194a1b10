"""Resilience policies: typed models, YAML presets, per-edge overrides and env overrides.

A policy file has four sections (see services/mesh/policies/full.yaml, the documented default):
`edge_defaults` (an EdgePolicy), `edges` (partial EdgePolicies keyed by the edge's proxy name
from topology.py, merged over the defaults), `server_defaults` and `servers` (likewise, keyed by
service name). Env overrides use `MESH_POLICY__<PATH>=<YAML value>`, `__` separating keys, e.g.
`MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS=2` (an edge name is short for
`EDGES__<edge>`, a service name for `SERVERS__<service>`) or
`MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S=5`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mesh.runtime import topology

PRESETS: tuple[str, ...] = ("unprotected", "retry-only", "full")
ENV_PREFIX = "MESH_POLICY__"


class PolicyError(ValueError):
    """A policy source could not be read or is invalid; the message names file, key, reason."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeadlinePolicy(_Model):
    """Time limits of one logical call; the inbound deadline and caller's timeout cap both."""

    total_s: float = Field(
        default=1.0, gt=0, description="whole call: attempts plus backoff sleeps"
    )
    attempt_s: float = Field(default=0.3, gt=0, description="one attempt's gRPC deadline (capped)")
    min_attempt_s: float = Field(
        default=0.005, ge=0, description="never start an attempt with less left"
    )


class RetryBudgetPolicy(_Model):
    """gRFC A6 retry throttling: a token bucket per dependency."""

    enabled: bool = True
    max_tokens: float = Field(
        default=10.0, gt=0, le=1000, description="bucket size; retries stop at half"
    )
    token_ratio: float = Field(default=0.1, gt=0, le=1, description="tokens a success gives back")


class RetryPolicy(_Model):
    """Retries of transient failures with full-jitter exponential backoff."""

    max_attempts: int = Field(
        default=3, ge=1, le=10, description="attempts per call; 1 = no retries"
    )
    base_backoff_s: float = Field(default=0.05, gt=0, description="first backoff cap (doubles)")
    max_backoff_s: float = Field(default=0.5, gt=0, description="largest backoff cap")
    budget: RetryBudgetPolicy = Field(default_factory=RetryBudgetPolicy)

    @model_validator(mode="after")
    def _caps_ordered(self) -> RetryPolicy:
        if self.max_backoff_s < self.base_backoff_s:
            raise ValueError("max_backoff_s must be >= base_backoff_s")
        return self


class BreakerPolicy(_Model):
    """Circuit breaker: consecutive-failure and failure-rate triggers, probes when half-open."""

    enabled: bool = True
    scope: Literal["method", "dependency"] = Field(
        default="method", description="one breaker per ..."
    )
    consecutive_failures: int = Field(
        default=5, ge=0, description="opens after N in a row; 0 = off"
    )
    failure_rate: float | None = Field(
        default=0.5, gt=0, le=1, description="opens at >= rate; null=off"
    )
    window_size: int = Field(default=20, ge=1, description="the rate is over the last N calls")
    min_calls: int = Field(
        default=10, ge=1, description="no rate decision before N calls in window"
    )
    open_s: float = Field(default=2.0, gt=0, description="time open before the first probe")
    half_open_max_probes: int = Field(
        default=1, ge=1, description="probes admitted while half-open"
    )
    half_open_successes: int = Field(default=1, ge=1, description="probe successes needed to close")

    @model_validator(mode="after")
    def _probes_can_close(self) -> BreakerPolicy:
        if self.half_open_successes > self.half_open_max_probes:
            raise ValueError("half_open_successes must be <= half_open_max_probes")
        if self.min_calls > self.window_size:
            raise ValueError("min_calls must be <= window_size")
        return self


class BulkheadPolicy(_Model):
    """A concurrency limit per dependency: reject at once, or queue for a bounded wait."""

    enabled: bool = True
    max_concurrent: int = Field(default=32, ge=1, description="calls in flight to the dependency")
    mode: Literal["reject", "queue"] = "reject"
    max_wait_s: float = Field(default=0.05, ge=0, description="queue mode: longest wait for a slot")
    pool: str | None = Field(
        default=None,
        description="edges naming the same pool share one limit (the anti-pattern seed 003 "
        "warns about; here so an experiment can show it)",
    )


class NativeRetryPolicy(_Model):
    """gRPC's own retryPolicy + retryThrottling (service config) instead of our retry strategy.

    Off by default: the interceptor is the one retry owner. An experiment turns it on to
    measure gRPC's built-in retries beside ours; then our retry strategy must be off.
    """

    enabled: bool = False
    max_attempts: int = Field(default=3, ge=2, le=5, description="gRPC caps it at 5")
    initial_backoff_s: float = Field(default=0.05, gt=0)
    max_backoff_s: float = Field(default=0.5, gt=0)
    backoff_multiplier: float = Field(default=2.0, gt=0)
    retryable_codes: list[str] = Field(default=["UNAVAILABLE"], min_length=1)
    max_tokens: int = Field(default=10, gt=0, le=1000, description="retryThrottling")
    token_ratio: float = Field(default=0.1, gt=0, le=1, description="retryThrottling")


class EdgePolicy(_Model):
    """Everything that protects one dependency edge."""

    deadline: DeadlinePolicy = Field(default_factory=DeadlinePolicy)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = Field(default_factory=BreakerPolicy)
    bulkhead: BulkheadPolicy = Field(default_factory=BulkheadPolicy)
    native_retry: NativeRetryPolicy = Field(default_factory=NativeRetryPolicy)

    @model_validator(mode="after")
    def _one_retry_owner(self) -> EdgePolicy:
        if self.native_retry.enabled and self.retry.max_attempts > 1:
            raise ValueError(
                "native_retry.enabled needs retry.max_attempts: 1 (one retry owner, or "
                "attempts multiply unseen)"
            )
        return self


class FallbackPolicy(_Model):
    """How the gateway degrades recommendations."""

    popular_ttl_s: float = Field(
        default=30.0,
        ge=0,
        description="serve the cached popular list without a call while it is this fresh",
    )


class ServerPolicy(_Model):
    """Server-side load shedding."""

    max_in_flight: int = Field(
        default=64, ge=0, description="calls handled at once; 0 = no shedding"
    )
    shed_pushback_ms: int = Field(
        default=200, ge=0, description="grpc-retry-pushback-ms on shed calls"
    )


class MeshPolicy(_Model):
    """A whole mesh's policy: defaults plus per-edge and per-service overrides, merged."""

    name: str
    edge_defaults: EdgePolicy = Field(default_factory=EdgePolicy)
    edges: dict[str, EdgePolicy] = {}
    server_defaults: ServerPolicy = Field(default_factory=ServerPolicy)
    servers: dict[str, ServerPolicy] = {}
    fallbacks: FallbackPolicy = Field(default_factory=FallbackPolicy)

    @model_validator(mode="after")
    def _known_names(self) -> MeshPolicy:
        known_edges = {e.proxy_name for e in topology.EDGES}
        known_services = {s.name for s in topology.SERVICES}
        for key in self.edges:
            if key not in known_edges:
                raise ValueError(f"edges.{key}: unknown edge; known: {sorted(known_edges)}")
        for key in self.servers:
            if key not in known_services:
                raise ValueError(f"servers.{key}: unknown service; known: {sorted(known_services)}")
        return self

    def edge(self, proxy_name: str) -> EdgePolicy:
        return self.edges.get(proxy_name, self.edge_defaults)

    def server(self, service_name: str) -> ServerPolicy:
        return self.servers.get(service_name, self.server_defaults)


def load_policy(source: str | None = None, environ: Mapping[str, str] | None = None) -> MeshPolicy:
    """Load a preset name or YAML path (None: env MESH_POLICY, else "full"), then env overrides."""
    env = os.environ if environ is None else environ
    source = source or env.get("MESH_POLICY") or "full"
    path, text = _read_source(source)
    return load_policy_text(text, path, env)


def load_policy_text(
    text: str, path: str = "<policy>", environ: Mapping[str, str] | None = None
) -> MeshPolicy:
    """A policy from YAML text (`path` names it in errors), then env overrides."""
    env = os.environ if environ is None else environ
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise PolicyError(f"{path}: top level must be a mapping, got {type(raw).__name__}")
    raw.setdefault("name", Path(path).stem)
    _apply_env_overrides(raw, env, path)
    try:
        return MeshPolicy.model_validate(_expand(raw))
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise PolicyError(f"{path}: {reasons}") from exc


def _read_source(source: str) -> tuple[str, str]:
    if source in PRESETS:
        preset = resources.files("mesh") / "policies" / f"{source}.yaml"
        return str(preset), preset.read_text(encoding="utf-8")
    path = Path(source)
    if not path.is_file():
        raise PolicyError(f"{source}: no such policy file, and not a preset ({', '.join(PRESETS)})")
    return str(path), path.read_text(encoding="utf-8")


def _expand(raw: dict[str, Any]) -> dict[str, Any]:
    """Merge each per-edge / per-service override over its section's defaults."""
    out = dict(raw)
    for section, defaults in (("edges", "edge_defaults"), ("servers", "server_defaults")):
        base = raw.get(defaults) or {}
        overrides = raw.get(section) or {}
        if isinstance(base, dict) and isinstance(overrides, dict):
            out[section] = {
                key: _deep_merge(base, value) if isinstance(value, dict) else value
                for key, value in overrides.items()
            }
    return out


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _apply_env_overrides(raw: dict[str, Any], env: Mapping[str, str], path: str) -> None:
    edges = {e.proxy_name for e in topology.EDGES}
    services = {s.name for s in topology.SERVICES}
    for var in sorted(k for k in env if k.startswith(ENV_PREFIX)):
        keys = [k.lower() for k in var[len(ENV_PREFIX) :].split("__")]
        if keys[0] in edges:
            keys.insert(0, "edges")
        elif keys[0] in services:
            keys.insert(0, "servers")
        if len(keys) < 2 or keys[0] not in MeshPolicy.model_fields:
            raise PolicyError(f"{path}: env {var}: no policy key {'.'.join(keys)}")
        node = raw
        for key in keys[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise PolicyError(f"{path}: env {var}: {key} is not a mapping")
            node = child
        try:
            node[keys[-1]] = yaml.safe_load(env[var])
        except yaml.YAMLError as exc:
            raise PolicyError(f"{path}: env {var}: value is not YAML: {exc}") from exc
