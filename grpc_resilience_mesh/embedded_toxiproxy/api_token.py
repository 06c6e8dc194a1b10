"""The optional API token (ours, not Toxiproxy's): with one set, every request but GET /version
must carry `Authorization: Bearer <token>`, or it is answered 401 before any handler runs.

Off unless configured, so the server stays a drop-in Toxiproxy for clients that cannot send a
header (toxiproxy-cli, toxiproxy-python). `mesh up`, `mesh chaos run` and `mesh demo` start
theirs with a per-run token, given in MESH_TOXIPROXY_TOKEN (never on the command line, where
every user of the host can read it); their clients read it from mesh.json. /version stays
open: readiness probes ask it, and it says nothing about the proxies.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.typedefs import Middleware

from grpc_resilience_mesh.embedded_toxiproxy.errors import ApiError

TOKEN_ENV = "MESH_TOXIPROXY_TOKEN"
OPEN_PATHS = frozenset({"/version"})
_BEARER = "bearer "
UNAUTHORIZED = ApiError(
    "this Toxiproxy API needs its token: send the header `Authorization: Bearer <token>` "
    f"(the server's {TOKEN_ENV}; `mesh up` records it as admin_token in its mesh.json)",
    401,
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def token_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """MESH_TOXIPROXY_TOKEN, or None when unset or blank (the API is then open)."""
    value = (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip()
    return value or None


def presented(header: str | None) -> bytes | None:
    if header is None or header[: len(_BEARER)].lower() != _BEARER:
        return None
    return header[len(_BEARER) :].strip().encode()


def token_gate(token: str) -> Middleware:
    """An aiohttp middleware answering 401 to requests without `token`."""
    expected = token.encode()

    @web.middleware
    async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in OPEN_PATHS:
            given = presented(request.headers.get("Authorization"))
            if given is None or not hmac.compare_digest(given, expected):
                return web.Response(
                    body=UNAUTHORIZED.body().encode(),
                    status=401,
                    headers={
                        "Content-Type": "application/json",
                        "WWW-Authenticate": 'Bearer realm="toxiproxy"',
                    },
                )
        return await handler(request)

    return gate
