"""Where the deployment files are, how they are parsed (grpc_resilience_mesh.services.safe_yaml, the
project's one YAML loader), and how Compose reads them: .env, then ${VAR} interpolation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.services import safe_yaml

ROOT = Path(__file__).resolve().parents[3]
DOTENV = ROOT / ".env"
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
TOXIPROXY_JSON = ROOT / "deploy" / "toxiproxy.json"
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = {"chaos": K8S / "overlays" / "chaos", "direct": K8S / "overlays" / "direct"}

MESH_SERVICES = ("gateway", "payment", "profile", "recommendation")
JAEGER_OTLP_GRPC_PORT = 4317
JAEGER_UI_PORT = 16686
JAEGER_HEALTH_PORT = 13133

_DOCUMENT_START = re.compile(r"^---[ \t]*$", re.M)
_VAR = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<braced>[^}]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?$", re.S)


def yaml_documents(text: str, name: str) -> list[Any]:
    """The non-empty documents of a `---`-separated YAML stream (a k8s manifest, `kubectl kustomize`
    output), each through grpc_resilience_mesh.services.safe_yaml, which reads one document at a
    time."""
    parts = _DOCUMENT_START.split(text)
    docs = [safe_yaml.load(part, f"{name}, document {i + 1}") for i, part in enumerate(parts)]
    return [doc for doc in docs if doc is not None]


def read_dotenv(path: Path = DOTENV) -> dict[str, str]:
    """KEY=VALUE lines; blank lines and # comments skipped (this file uses no quoting)."""
    env: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"{path.name}:{number}: not KEY=VALUE: {line!r}")
        if key in env:
            raise ValueError(f"{path.name}:{number}: {key} set twice")
        env[key] = value
    return env


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's interpolation: $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err},
    ${VAR?err}, ${VAR:+alt}, ${VAR+alt}, $$ for a literal $. An unset variable without a
    default is an error here (Compose would warn and substitute an empty string)."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        if match["plain"]:
            return _lookup(match["plain"], env)
        parsed = _BRACED.match(match["braced"])
        if parsed is None:
            raise ValueError(f"bad substitution ${{{match['braced']}}}")
        name, op, arg = parsed["name"], parsed["op"], parsed["arg"]
        is_set = name in env and (env[name] != "" or not (op or "").startswith(":"))
        if op in (":-", "-"):
            return env[name] if is_set else str(interpolate(arg, env))
        if op in (":?", "?"):
            if not is_set:
                raise ValueError(f"required variable {name}: {arg}")
            return env[name]
        if op in (":+", "+"):
            return str(interpolate(arg, env)) if is_set else ""
        return _lookup(name, env)

    return _VAR.sub(substitute, value)


def _lookup(name: str, env: dict[str, str]) -> str:
    if name not in env:
        raise ValueError(f"${{{name}}} is used but not set in .env")
    return env[name]


def load_compose() -> dict[str, Any]:
    """docker-compose.yml as Compose sees it after reading .env (YAML merge keys resolved)."""
    raw = safe_yaml.load_file(str(COMPOSE_FILE))
    model: dict[str, Any] = interpolate(raw, read_dotenv())
    return model


def load_toxiproxy_json(path: Path = TOXIPROXY_JSON) -> list[dict[str, Any]]:
    proxies: list[dict[str, Any]] = json.loads(path.read_text())
    return proxies


def env_list_to_dict(env: list[dict[str, Any]]) -> dict[str, str]:
    """A container's env, literal values only (valueFrom entries are left out)."""
    return {e["name"]: e["value"] for e in env if "value" in e}
