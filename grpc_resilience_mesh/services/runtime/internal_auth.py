"""The mesh's internal credential: the services behind the gateway answer only the mesh's own
callers.

`MESH_INTERNAL_TOKEN` configures it (`mesh up` generates one per run, gives it to every service in
its environment and records it as `internal_token` in mesh.json, 0600). Every edge channel sends it
with every attempt as `authorization: Bearer <token>`: a header, so it crosses Toxiproxy, which
relays bytes. Profile, recommendation, payment and notification refuse a call without it with
UNAUTHENTICATED before it is counted or its `resilience-criticality` read, so a local process can
neither spend payment's API nor raise its calls' criticality over the gateway's. Health and
reflection stay open for readiness probes. The gateway's port is public: its callers hold API keys
(grpc_resilience_mesh.services.gateway.auth), never this. Unset, the services trust whoever reaches
them, as in Compose and Kubernetes, where the networks keep others out.
"""

from __future__ import annotations

from grpc_aio_resilience import ServerLayer
from grpc_resilience_mesh.services.runtime.admin_auth import admin_token
from grpc_resilience_mesh.services.runtime.bearer import BearerTokenLayer, bearer_metadata
from grpc_resilience_mesh.services.topology import GATEWAY

TOKEN_ENV = "MESH_INTERNAL_TOKEN"
OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
UNAUTHENTICATED_DETAILS = (
    "this service answers the mesh's own callers only: send metadata `authorization: Bearer "
    f"<token>` (the service's {TOKEN_ENV}; `mesh up` records it as internal_token in mesh.json)"
)


def internal_token(raw: str | None) -> str | None:
    """The configured token, or None when unset or blank; the admin token's rules (16..512
    characters of A-Z a-z 0-9 - . _ ~ + / =), a ConfigError naming the variable otherwise."""
    return admin_token(raw, TOKEN_ENV)


def internal_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """What every call a service makes to another carries: the bearer token, or nothing."""
    return bearer_metadata(token)


def internal_gate(service_name: str, token: str | None) -> tuple[ServerLayer, ...]:
    """The layer a service's own port is mounted with: none on the gateway's public port or
    without a token."""
    if token is None or service_name == GATEWAY.name:
        return ()
    return (InternalTokenLayer(token),)


class InternalTokenLayer(BearerTokenLayer):
    """Refuses calls without the internal token before any layer inside reads them."""

    def __init__(self, token: str) -> None:
        super().__init__(token, OPEN_PREFIXES, UNAUTHENTICATED_DETAILS)
