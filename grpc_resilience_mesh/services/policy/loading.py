"""Loading the mesh's policy: YAML presets and files, per-edge overrides and env overrides.

A policy file has four sections (see grpc_resilience_mesh/services/policies/full.yaml, the
documented default): `edge_defaults` (an EdgePolicy), `edges` (partial EdgePolicies keyed by the
edge's proxy name from topology.py, merged over the defaults), `server_defaults` and `servers`
(likewise, keyed by service name). Env overrides use `MESH_POLICY__<PATH>=<YAML value>`, `__`
separating keys, e.g. `MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS=2` (an edge name is
short for `EDGES__<edge>`, a service name for `SERVERS__<service>`) or
`MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S=5`.

Every document (file, SetPolicy, each override value) is parsed by
grpc_resilience_mesh.services.safe_yaml. Every number is finite and inside the range written beside
its field; the cross-field rules are those the pipeline needs to work (see each model's validator).
A refusal is a PolicyError naming the source, the key and the rule, never repeating the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grpc_aio_resilience import OptionError
from grpc_resilience_mesh.services import safe_yaml, settings, topology
from grpc_resilience_mesh.services.policy.model import MeshPolicy

PRESETS: tuple[str, ...] = ("unprotected", "retry-only", "full")
_PRESETS_DIR = resources.files("grpc_resilience_mesh.services") / "policies"
POLICY: settings.Var[str | None] = settings.Var(
    "MESH_POLICY",
    settings.text,
    None,
    "a policy preset (unprotected, retry-only, full) or a YAML path; default full",
)
ENV_PREFIX = "MESH_POLICY__"
MAX_REASONS = 5
"""A refusal lists this many problems, then how many more there are."""


class PolicyError(ValueError):
    """A policy source could not be read or is invalid; the message names file, key, reason."""


def load_policy(source: str | None = None, environ: Mapping[str, str] | None = None) -> MeshPolicy:
    """Load a preset name or YAML path (None: env MESH_POLICY, else "full"), then env overrides.

    When the source is MESH_POLICY's value, a refusal of the file starts with "MESH_POLICY: "."""
    env = settings.env_or_os(environ)
    from_env = POLICY.read(env)
    source = source or from_env or "full"
    try:
        path, raw = read_policy_document(source)
        return _validated(raw, path, env)
    except PolicyError as err:
        if source != from_env or str(err).startswith(ENV_PREFIX):
            raise
        raise PolicyError(f"MESH_POLICY: {err}") from None


def load_policy_text(
    text: str | bytes, path: str = "<policy>", environ: Mapping[str, str] | None = None
) -> MeshPolicy:
    """A policy from YAML text (`path` names it in errors), then env overrides."""
    env = settings.env_or_os(environ)
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
    errors = exc.errors(include_url=False, include_input=False)
    from_env: list[str] = []
    from_source: list[str] = []
    for err in errors:
        loc, blame_loc, rule = _located(err)
        reason = f"{'.'.join(safe_yaml.short(p) for p in loc)}: {rule}" if loc else rule
        blamed = next((var for var, keys in overrides if _within(keys, blame_loc, rule)), None)
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


def _located(err: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """An error's full key path, the section an override is blamed by, and its rule. An
    options class's own check (OptionError) names the path below the section pydantic reports
    it at; a rule across fields (attempt_s <= total_s) is any of the section's keys' doing."""
    loc = tuple(str(p) for p in err["loc"])
    cause = err.get("ctx", {}).get("error")
    if isinstance(cause, OptionError):
        full = (*loc, *cause.path.split(".")) if cause.path else loc
        return full, full[:-1] if cause.path else loc, cause.rule
    if err["type"] == "unexpected_keyword_argument":  # an options dataclass's unknown key
        return loc, loc, "Extra inputs are not permitted"
    return loc, loc, err["msg"].removeprefix("Value error, ")


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
    return (_PRESETS_DIR / f"{name}.yaml").read_text()


def read_policy_document(source: str) -> tuple[str, Any]:
    """A preset name or a policy file, read (not validated): its path for errors, and the
    loaded YAML document. Errors are PolicyErrors naming the source."""
    try:
        if source in PRESETS:
            preset = _PRESETS_DIR / f"{source}.yaml"
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
