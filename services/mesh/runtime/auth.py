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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from mesh.config_error import ConfigError
from mesh.resilience.handlers import ServerLayer, is_exempt

BEARER = "bearer "
UNAUTHENTICATED_DETAILS = "missing or invalid API key"


@dataclass(frozen=True)
class ApiKeys:
    """The accepted keys, or `enabled=False` when MESH_AUTH=off."""

    keys: tuple[bytes, ...]
    enabled: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ApiKeys:
        if environ.get("MESH_AUTH", "").strip().lower() == "off":
            return cls((), enabled=False)
        raw: list[str] = []
        if environ.get("MESH_API_KEYS"):
            raw += environ["MESH_API_KEYS"].split(",")
        if path := environ.get("MESH_API_KEYS_FILE"):
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


def bearer_token(metadata: Sequence[tuple[str, Any]] | None) -> bytes | None:
    for name, value in metadata or ():
        if name == "authorization":
            text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
            if text[: len(BEARER)].lower() == BEARER:
                return text[len(BEARER) :].strip().encode()
            return None
    return None


def rejection(
    code: grpc.StatusCode, details: str, trailers: Sequence[tuple[str, str]] = ()
) -> grpc.RpcMethodHandler:
    """A unary handler that fails every call without deserializing its request."""

    async def reject(request: bytes, context: grpc.aio.ServicerContext) -> None:
        await context.abort(code, details, tuple(trailers))

    return grpc.unary_unary_rpc_method_handler(reject)


class AuthInterceptor(ServerLayer):
    """Refuses non-exempt calls without a valid bearer key before anything else runs."""

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
