"""Resilience policies: typed models, YAML presets, per-edge overrides and env overrides.

A policy file has four sections (see services/mesh/policies/full.yaml, the documented default):
`edge_defaults` (an EdgePolicy), `edges` (partial EdgePolicies keyed by the edge's proxy name
from topology.py, merged over the defaults), `server_defaults` and `servers` (likewise, keyed by
service name). Env overrides use `MESH_POLICY__<PATH>=<YAML value>`, `__` separating keys, e.g.
`MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS=2` (an edge name is short for
`EDGES__<edge>`, a service name for `SERVERS__<service>`) or
`MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S=5`.

Every document (file, SetPolicy, each override value) is parsed by mesh.safe_yaml. Every number
is finite and inside the range written beside its field; the cross-field rules are those the
pipeline needs to work (see each model's validator). A refusal is a PolicyError naming the
source, the key and the rule, never repeating the document.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import grpc
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from mesh import safe_yaml, topology
from mesh.resilience.admission_policy import LimitPolicy, PoolPolicy, QueuePolicy
from mesh.resilience.criticality_policy import CriticalityPolicy
from mesh.resilience.outlier_policy import OutlierPolicy
from mesh.resilience.throttle_policy import ThrottlePolicy

PRESETS: tuple[str, ...] = ("unprotected", "retry-only", "full")
ENV_PREFIX = "MESH_POLICY__"
MAX_REASONS = 5
"""A refusal lists this many problems, then how many more there are."""


class PolicyError(ValueError):
    """A policy source could not be read or is invalid; the message names file, key, reason."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _at_most(model: BaseModel, low: str, high: str, *, strict: bool = False, why: str = "") -> None:
    """The cross-field rule `low <= high` (`low < high` when strict), naming both fields."""
    lo, hi = getattr(model, low), getattr(model, high)
    if lo > hi or (strict and lo == hi):
        raise ValueError(f"{low} ({lo}) must be {'<' if strict else '<='} {high} ({hi}){why}")


class DeadlinePolicy(_Model):
    """Time limits of one logical call; the inbound deadline and caller's timeout cap both.

    Rule: min_attempt_s < attempt_s <= total_s. An attempt needs more than min_attempt_s left
    to start, so with min_attempt_s >= total_s no call ever starts; and an attempt_s longer than
    the total makes every timeout the caller's deadline rather than the attempt's own, which
    the retry and the breaker then ignore (a hung dependency would never open the breaker).
    """

    total_s: float = Field(
        default=1.0, ge=0.001, le=300, description="[0.001, 300]: attempts plus backoff sleeps"
    )
    attempt_s: float = Field(
        default=0.3,
        ge=0.001,
        le=300,
        description="[0.001, 300], <= total_s: one attempt's deadline",
    )
    min_attempt_s: float = Field(
        default=0.005, ge=0, le=10, description="[0, 10], < attempt_s: never start with less left"
    )

    @model_validator(mode="after")
    def _attempt_fits(self) -> DeadlinePolicy:
        _at_most(self, "attempt_s", "total_s", why=": an attempt must fit in the call's budget")
        _at_most(self, "min_attempt_s", "attempt_s", strict=True)
        return self


class RetryBudgetPolicy(_Model):
    """gRFC A6 retry throttling: a token bucket per dependency."""

    enabled: bool = True
    max_tokens: float = Field(
        default=10.0, gt=0, le=1000, description="(0, 1000]: bucket size; retries stop at half"
    )
    token_ratio: float = Field(
        default=0.1, gt=0, le=1, description="(0, 1]: tokens a success gives back"
    )


class RetryPolicy(_Model):
    """Retries of transient failures with full-jitter exponential backoff (base <= cap)."""

    max_attempts: int = Field(
        default=3, ge=1, le=10, description="[1, 10]: attempts per call; 1 = no retries"
    )
    base_backoff_s: float = Field(
        default=0.05, gt=0, le=60, description="(0, 60]: first backoff cap (doubles)"
    )
    max_backoff_s: float = Field(
        default=0.5, gt=0, le=60, description="(0, 60], >= base_backoff_s: largest backoff cap"
    )
    budget: RetryBudgetPolicy = Field(default_factory=RetryBudgetPolicy)

    @model_validator(mode="after")
    def _caps_ordered(self) -> RetryPolicy:
        _at_most(self, "base_backoff_s", "max_backoff_s")
        return self


class BreakerPolicy(_Model):
    """Circuit breaker: consecutive-failure and failure-rate triggers, probes when half-open.

    Rules: min_calls <= window_size (else the rate is never judged) and half_open_successes <=
    half_open_max_probes (else a half-open breaker can never close).
    """

    enabled: bool = True
    scope: Literal["method", "dependency"] = Field(
        default="method", description="one breaker per ..."
    )
    consecutive_failures: int = Field(
        default=5, ge=0, le=1000, description="[0, 1000]: opens after N in a row; 0 = off"
    )
    failure_rate: float | None = Field(
        default=0.5, gt=0, le=1, description="(0, 1] or null (off): opens at >= rate"
    )
    window_size: int = Field(
        default=20, ge=1, le=1000, description="[1, 1000]: the rate is over the last N calls"
    )
    min_calls: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="[1, 1000], <= window_size: no rate decision before N calls",
    )
    open_s: float = Field(
        default=2.0, gt=0, le=300, description="(0, 300]: time open before the first probe"
    )
    half_open_max_probes: int = Field(
        default=1, ge=1, le=100, description="[1, 100]: probes admitted while half-open"
    )
    half_open_successes: int = Field(
        default=1,
        ge=1,
        le=100,
        description="[1, 100], <= half_open_max_probes: successes that close it",
    )

    @model_validator(mode="after")
    def _probes_can_close(self) -> BreakerPolicy:
        _at_most(self, "half_open_successes", "half_open_max_probes", why=", or it never closes")
        _at_most(self, "min_calls", "window_size", why=", or the rate is never judged")
        return self


class BulkheadPolicy(_Model):
    """A concurrency limit per dependency: reject at once, or queue for a bounded wait."""

    enabled: bool = True
    max_concurrent: int = Field(
        default=32, ge=1, le=10_000, description="[1, 10000]: calls in flight to the dependency"
    )
    mode: Literal["reject", "queue"] = "reject"
    max_wait_s: float = Field(
        default=0.05, ge=0, le=60, description="[0, 60]: queue mode: longest wait for a slot"
    )
    pool: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="edges of one caller naming the same pool share one limit, so their "
        "bulkhead sections must be equal (the anti-pattern seed 003 warns about; here so an "
        "experiment can show it)",
    )


class NativeRetryPolicy(_Model):
    """gRPC's own retryPolicy + retryThrottling (service config) instead of our retry strategy.

    Off by default: the interceptor is the one retry owner. An experiment turns it on to
    measure gRPC's built-in retries beside ours; then our retry strategy must be off. The
    ranges are gRPC's (gRFC A6), tighter where gRPC would reject the whole service config.
    """

    enabled: bool = False
    max_attempts: int = Field(default=3, ge=2, le=5, description="[2, 5]: gRPC caps it at 5")
    initial_backoff_s: float = Field(
        default=0.05, ge=0.001, le=60, description="[0.001, 60] (kept to microseconds)"
    )
    max_backoff_s: float = Field(
        default=0.5, ge=0.001, le=60, description="[0.001, 60], >= initial_backoff_s"
    )
    backoff_multiplier: float = Field(default=2.0, gt=0, le=10, description="(0, 10]")
    retryable_codes: list[str] = Field(
        default=["UNAVAILABLE"], min_length=1, max_length=16, description="gRPC code names"
    )
    max_tokens: int = Field(default=10, gt=0, le=1000, description="(0, 1000]: retryThrottling")
    token_ratio: float = Field(default=0.1, gt=0, le=1, description="(0, 1]: retryThrottling")

    @field_validator("initial_backoff_s", "max_backoff_s")
    @classmethod
    def _as_duration(cls, value: float) -> float:
        # The service config spells durations "<decimal>s"; 1e-05 or 17 digits would void it.
        return round(value, 6)

    @field_validator("retryable_codes")
    @classmethod
    def _known_codes(cls, codes: list[str]) -> list[str]:
        names = [c.upper() for c in codes]
        for name in names:
            if name not in grpc.StatusCode.__members__ or name == "OK":
                raise ValueError(f"{safe_yaml.short(name)!r} is not a gRPC error code name")
        return names

    @model_validator(mode="after")
    def _caps_ordered(self) -> NativeRetryPolicy:
        _at_most(self, "initial_backoff_s", "max_backoff_s")
        return self


PipelineOrder = Literal["retry-outside-breaker", "breaker-outside-retry"]
"""Where retry sits relative to the breaker (mesh.resilience.pipeline.ORDERS)."""


class EdgePolicy(_Model):
    """Everything that protects one dependency edge."""

    order: PipelineOrder = Field(
        default="retry-outside-breaker",
        description="retry-outside-breaker: every attempt counts toward the breaker and an "
        "open breaker stops the retries; breaker-outside-retry (seed 003's order): a logical "
        "call counts once, its retries run on even if the breaker opens meanwhile",
    )

    deadline: DeadlinePolicy = Field(default_factory=DeadlinePolicy)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = Field(default_factory=BreakerPolicy)
    bulkhead: BulkheadPolicy = Field(default_factory=BulkheadPolicy)
    native_retry: NativeRetryPolicy = Field(default_factory=NativeRetryPolicy)
    throttle: ThrottlePolicy = Field(default_factory=ThrottlePolicy)
    outlier: OutlierPolicy = Field(default_factory=OutlierPolicy)

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
        le=3600,
        description="[0, 3600]: serve the cached popular list without a call while this fresh",
    )


class ServerPolicy(_Model):
    """Server-side admission (unary calls and streams have separate limits, so streams can
    never take the places of unary calls; mesh.resilience.admission_policy for the unary
    calls' limit algorithm, queue and declared pool) and the time limits of server streams."""

    max_in_flight: int = Field(
        default=64, ge=0, le=100_000, description="[0, 100000]: unary calls at once; 0 = no limit"
    )
    max_streams_in_flight: int = Field(
        default=16, ge=0, le=100_000, description="[0, 100000]: streams at once; 0 = no limit"
    )
    stream_write_timeout_s: float = Field(
        default=5.0, ge=0, le=300, description="[0, 300]: a reader must take each message in"
    )
    stream_deadline_s: float = Field(
        default=30.0, ge=0, le=3600, description="[0, 3600]: streams with no client deadline"
    )
    shed_pushback_ms: int = Field(
        default=200, ge=0, le=60_000, description="[0, 60000]: grpc-retry-pushback-ms when shed"
    )
    limit: LimitPolicy = Field(default_factory=LimitPolicy)
    queue: QueuePolicy = Field(default_factory=QueuePolicy)
    pool: PoolPolicy = Field(default_factory=PoolPolicy)


class MeshPolicy(_Model):
    """A whole mesh's policy: defaults plus per-edge and per-service overrides, merged."""

    name: str = Field(min_length=1, max_length=100)
    edge_defaults: EdgePolicy = Field(default_factory=EdgePolicy)
    edges: dict[str, EdgePolicy] = {}
    server_defaults: ServerPolicy = Field(default_factory=ServerPolicy)
    servers: dict[str, ServerPolicy] = {}
    fallbacks: FallbackPolicy = Field(default_factory=FallbackPolicy)
    criticality: CriticalityPolicy = Field(default_factory=CriticalityPolicy)

    @model_validator(mode="after")
    def _known_names(self) -> MeshPolicy:
        known_edges = {e.name for e in topology.EDGES}
        known_services = {s.name for s in topology.SERVICES}
        for key in self.edges:
            if key not in known_edges:
                raise ValueError(
                    f"edges.{safe_yaml.short(key)}: unknown edge; known: {sorted(known_edges)}"
                )
        for key in self.servers:
            if key not in known_services:
                raise ValueError(
                    f"servers.{safe_yaml.short(key)}: unknown service; "
                    f"known: {sorted(known_services)}"
                )
        return self

    @model_validator(mode="after")
    def _pools_agree(self) -> MeshPolicy:
        """A caller builds one Bulkhead per pool from the first edge naming it: the others'
        settings would be ignored silently, so they must be the same."""
        first: dict[tuple[str, str], tuple[str, BulkheadPolicy]] = {}
        for e in topology.EDGES:
            bulkhead = self.edge(e.name).bulkhead
            if not bulkhead.enabled or bulkhead.pool is None:
                continue
            seen = first.setdefault((e.caller, bulkhead.pool), (e.name, bulkhead))
            if seen[1] != bulkhead:
                raise ValueError(
                    f"edges.{e.name}.bulkhead: pool {bulkhead.pool!r} is shared with "
                    f"{seen[0]}, so its bulkhead settings must be the same"
                )
        return self

    def edge(self, name: str) -> EdgePolicy:
        return self.edges.get(name, self.edge_defaults)

    def server(self, service_name: str) -> ServerPolicy:
        return self.servers.get(service_name, self.server_defaults)


def load_policy(source: str | None = None, environ: Mapping[str, str] | None = None) -> MeshPolicy:
    """Load a preset name or YAML path (None: env MESH_POLICY, else "full"), then env overrides.

    When the source is MESH_POLICY's value, a refusal of the file starts with "MESH_POLICY: "."""
    env = os.environ if environ is None else environ
    source = source or env.get("MESH_POLICY") or "full"
    try:
        path, raw = read_policy_document(source)
        return _validated(raw, path, env)
    except PolicyError as err:
        if source != env.get("MESH_POLICY") or str(err).startswith(ENV_PREFIX):
            raise
        raise PolicyError(f"MESH_POLICY: {err}") from None


def load_policy_text(
    text: str | bytes, path: str = "<policy>", environ: Mapping[str, str] | None = None
) -> MeshPolicy:
    """A policy from YAML text (`path` names it in errors), then env overrides."""
    env = os.environ if environ is None else environ
    try:
        raw = safe_yaml.load(text, path)
    except safe_yaml.YamlError as exc:
        raise PolicyError(str(exc)) from None
    return _validated(raw, path, env)


Override = tuple[str, tuple[str, ...]]
"""An env override: the variable, and the key path it set."""


def _validated(raw: Any, path: str, env: Mapping[str, str]) -> MeshPolicy:
    if not isinstance(raw, dict):
        kind = type(raw).__name__
        raise PolicyError(f"{path}: not a policy: top level must be a mapping, got {kind}")
    why = safe_yaml.not_a(raw, "a policy", "edge_defaults or gateway_to_payment")
    if why is not None:
        raise PolicyError(f"{path}: {why}")
    raw = _unshared(raw)  # aliases share objects; an override must change one place only
    raw.setdefault("name", Path(path).stem)
    overrides = _apply_env_overrides(raw, env, path)
    try:
        return MeshPolicy.model_validate(_expand(raw))
    except ValidationError as exc:
        raise PolicyError(describe_errors(exc, path, overrides)) from None


def describe_errors(exc: ValidationError, source: str, overrides: Sequence[Override] = ()) -> str:
    """`<source>: key.path: rule` for the first MAX_REASONS problems, never the input values.

    The source is the env variable that set the key (or a section it merges into), else
    `source`; one variable's breach of one rule is reported once, not once per merged edge.
    """
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    from_env: list[str] = []
    from_source: list[str] = []
    for err in errors:
        loc = tuple(str(p) for p in err["loc"])
        rule = err["msg"].removeprefix("Value error, ")
        reason = f"{'.'.join(safe_yaml.short(p) for p in loc)}: {rule}" if loc else rule
        blamed = next((var for var, keys in overrides if _within(keys, loc, rule)), None)
        if blamed is None:
            from_source.append(reason)
        elif not any(r.startswith(f"{blamed}: ") and r.endswith(rule) for r in from_env):
            from_env.append(f"{blamed}: {reason}")
    if from_source:
        from_source[0] = f"{source}: {from_source[0]}"
    reasons = from_env + from_source
    shown = reasons[:MAX_REASONS]
    if len(reasons) > MAX_REASONS:
        shown.append(f"and {len(reasons) - MAX_REASONS} more")
    return "; ".join(shown)


def _within(keys: tuple[str, ...], loc: tuple[str, ...], rule: str) -> bool:
    """Whether an error at `loc` concerns the key an override set (or the model holding it);
    an override of edge_defaults / server_defaults also reaches every merged edge / server.
    The whole policy's rules (loc `()`) name the edge or service they are about."""
    if not loc:
        return ".".join(keys[:2]) in rule
    candidates = [keys]
    merged_into = {"edge_defaults": "edges", "server_defaults": "servers"}.get(keys[0])
    if merged_into is not None and len(loc) > 1 and loc[0] == merged_into:
        candidates.append((merged_into, loc[1], *keys[1:]))
    return any(c[: len(loc)] == loc[: len(c)] for c in candidates)


def preset_text(name: str) -> str:
    """The YAML of a preset shipped with mesh (one of PRESETS): the one preset loader."""
    if name not in PRESETS:
        raise PolicyError(f"{safe_yaml.short(name, 80)}: not a preset ({', '.join(PRESETS)})")
    return (resources.files("mesh") / "policies" / f"{name}.yaml").read_text()


def read_policy_document(source: str) -> tuple[str, Any]:
    """A preset name or a policy file, read (not validated): its path for errors, and the
    loaded YAML document. Errors are PolicyErrors naming the source."""
    try:
        if source in PRESETS:
            preset = resources.files("mesh") / "policies" / f"{source}.yaml"
            return str(preset), safe_yaml.load(preset_text(source), str(preset))
        if not Path(source).is_file():
            raise PolicyError(
                f"{safe_yaml.short(source, 200)}: no such policy file, and not a preset "
                f"({', '.join(PRESETS)})"
            )
        return source, safe_yaml.load_file(source)
    except safe_yaml.YamlError as exc:
        raise PolicyError(str(exc)) from None


def _unshared(value: Any) -> Any:
    """A tree copy of a loaded document (safe_yaml bounds its depth and expanded size)."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def _expand(raw: dict[str, Any]) -> dict[str, Any]:
    """Merge each per-edge / per-service override over its section's defaults."""
    out = dict(raw)
    for section, defaults in (("edges", "edge_defaults"), ("servers", "server_defaults")):
        base = raw.get(defaults) or {}
        overrides = raw.get(section) or {}
        if isinstance(base, dict) and isinstance(overrides, dict):
            out[section] = {
                key: deep_merge(base, value) if isinstance(value, dict) else value
                for key, value in overrides.items()
            }
    return out


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`, mappings key by key, as a new tree: the one deep merge (section
    defaults under per-edge settings here; a variant's overrides over its base in chaos).
    Neither argument is changed, and the result shares no mapping or list with `override`."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = _unshared(value)
    return merged


def _apply_env_overrides(raw: dict[str, Any], env: Mapping[str, str], path: str) -> list[Override]:
    """Each MESH_POLICY__ variable sets one key; a bad one is named, with the rule it broke."""
    applied: list[Override] = []
    edges = {e.name for e in topology.EDGES}
    services = {s.name for s in topology.SERVICES}
    for var in sorted(k for k in env if k.startswith(ENV_PREFIX)):
        keys = [k.lower() for k in var[len(ENV_PREFIX) :].split("__")]
        if keys[0] in edges:
            keys.insert(0, "edges")
        elif keys[0] in services:
            keys.insert(0, "servers")
        if len(keys) < 2 or keys[0] not in MeshPolicy.model_fields or not all(keys):
            raise PolicyError(f"{var}: no policy key {safe_yaml.short('.'.join(keys), 80)}")
        node = raw
        for key in keys[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise PolicyError(f"{var}: {key} is not a mapping in {path}")
            node = child
        try:
            node[keys[-1]] = safe_yaml.load(env[var], var)
        except safe_yaml.YamlError as exc:
            raise PolicyError(str(exc)) from None
        applied.append((var, tuple(keys)))
    return applied
