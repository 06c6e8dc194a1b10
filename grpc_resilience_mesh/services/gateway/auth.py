"""API keys at the gateway: who may call the public API at all.

Keys come from `MESH_API_KEYS` (comma-separated) or `MESH_API_KEYS_FILE` (one per line, `#`
comments allowed). A call must carry `authorization: Bearer <key>`; a missing and a wrong key
get the same UNAUTHENTICATED "missing or invalid API key", and the presented key is compared
with every configured key by `hmac.compare_digest` without stopping at the first match, so
neither the answer nor its timing says which keys exist. Health, reflection and FaultAdmin
are exempt: probes must work without a secret, and FaultAdmin listens on loopback only.
With neither variable set the gateway refuses to start, unless `MESH_AUTH=off` says, on
purpose, that anyone who reaches the port may call it.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio

from grpc_aio_resilience import ServerLayer
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.exempt import is_exempt
from grpc_resilience_mesh.services.runtime.bearer import bearer_token, rejection

UNAUTHENTICATED_DETAILS = "missing or invalid API key"
AUTH = settings.Var(
    "MESH_AUTH",
    settings.lower_choice("on", "off"),
    "on",
    "off: no API keys needed",
)
API_KEYS = settings.Var("MESH_API_KEYS", settings.text, "", "the API keys, comma-separated")
API_KEYS_FILE = settings.Var(
    "MESH_API_KEYS_FILE", settings.text, "", "a file of API keys, one per line, # comments"
)


@dataclass(frozen=True)
class ApiKeys:
    """The accepted keys, or `enabled=False` when MESH_AUTH=off."""

    keys: tuple[bytes, ...]
    enabled: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ApiKeys:
        if AUTH.read(environ) == "off":
            return cls((), enabled=False)
        raw: list[str] = API_KEYS.read(environ).split(",")
        if path := API_KEYS_FILE.read(environ):
            try:
                lines = Path(path).read_text().splitlines()
            except OSError as err:
                raise ConfigError(f"MESH_API_KEYS_FILE={path!r}: {err.strerror}") from None
            raw += [line for line in lines if not line.lstrip().startswith("#")]
        keys = tuple(k.strip().encode() for k in raw if k.strip())
        if not keys:
            raise ConfigError(
                "the gateway needs API keys: set MESH_API_KEYS (comma-separated) or "
                "MESH_API_KEYS_FILE (one per line); MESH_AUTH=off disables authentication"
            )
        return cls(keys)

    def match(self, presented: bytes) -> bytes | None:
        """The configured key equal to `presented`, comparing against every key."""
        found: bytes | None = None
        for key in self.keys:
            if hmac.compare_digest(key, presented):
                found = key
        return found


class AuthInterceptor(ServerLayer):
    """Refuses non-exempt calls without a valid bearer key before anything else runs."""

    wraps_per_method = True

    def __init__(self, keys: ApiKeys) -> None:
        self._keys = keys
        self._reject = rejection(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_DETAILS)

    def refuse(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if not self._keys.enabled or is_exempt(handler_call_details.method):
            return None
        presented = bearer_token(handler_call_details.invocation_metadata)
        if presented is None or self._keys.match(presented) is None:
            return self._reject
        return None

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        return handler
