"""The admin port's credential: FaultAdmin and PolicyAdmin answer only callers holding the token.

`MESH_ADMIN_TOKEN` configures it (`mesh up` generates one per run and records it in mesh.json
as `admin_token`); unset, the admin port stays open to whoever reaches it, as in Compose and
Kubernetes, where the network keeps others out. A call carries `authorization: Bearer <token>`;
a missing and a wrong token get the same UNAUTHENTICATED answer, compared with
`hmac.compare_digest`, before the request is decoded. Reflection stays open: it only describes
the API, and `grpcurl list` must tell a user what is there.
"""

from __future__ import annotations

import string

from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.runtime.bearer import BearerTokenLayer, bearer_metadata

TOKEN_ENV = "MESH_ADMIN_TOKEN"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 512
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "-._~+/=")
OPEN_PREFIXES = ("/grpc.reflection.",)
UNAUTHENTICATED_DETAILS = (
    "admin calls need this mesh's admin token: send metadata `authorization: Bearer <token>` "
    f"(the service's {TOKEN_ENV}; `mesh up` records it as admin_token in its mesh.json)"
)


def admin_token(raw: str | None, variable: str = TOKEN_ENV) -> str | None:
    """The configured token, or None when unset or blank; a ConfigError naming `variable`
    (never quoting the value: it is a secret) when it cannot be one."""
    value = (raw or "").strip()
    if not value:
        return None
    if not MIN_TOKEN_CHARS <= len(value) <= MAX_TOKEN_CHARS or not set(value) <= _TOKEN_CHARS:
        raise ConfigError(
            f"{variable}: expected {MIN_TOKEN_CHARS}..{MAX_TOKEN_CHARS} characters of "
            "A-Z a-z 0-9 - . _ ~ + / = (e.g. python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    return value


def admin_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """The metadata an admin call carries: the bearer token, or nothing when there is none."""
    return bearer_metadata(token)


class AdminTokenLayer(BearerTokenLayer):
    """Refuses admin calls without the token before anything else runs (mounted outermost)."""

    def __init__(self, token: str) -> None:
        super().__init__(token, OPEN_PREFIXES, UNAUTHENTICATED_DETAILS)
