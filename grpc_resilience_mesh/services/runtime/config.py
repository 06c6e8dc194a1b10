"""Service configuration from the environment: frozen, validated once at start-up.

The rules for each kind of value are `grpc_resilience_mesh.services.settings`'; the `<CALLEE>_ADDR`
names come from the topology at run time, so they are read with `settings.read` rather than declared
as fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.policy.loading import POLICY
from grpc_resilience_mesh.services.runtime.admin_auth import TOKEN_ENV, admin_token
from grpc_resilience_mesh.services.runtime.internal_auth import TOKEN_ENV as INTERNAL_TOKEN_ENV
from grpc_resilience_mesh.services.runtime.internal_auth import internal_token
from grpc_resilience_mesh.services.topology import ServiceSpec, edges_from, service

__all__ = ["ConfigError", "ServiceConfig"]

MAX_GRACE_S = 3600.0
MIN_MESSAGE_BYTES = 4 * 1024
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
MAX_CONNECTIONS = 1_000_000
MAX_HANDSHAKE_TIMEOUT_S = 120.0
MAX_SETTINGS_ACK_TIMEOUT_S = 600.0
EDGE_SETTINGS_ACK_TIMEOUT_S = 5.0
"""The gateway's: its clients come from outside the mesh (docs/upstream/grpc-preauth-metadata.md
says why a short one matters)."""
INNER_SETTINGS_ACK_TIMEOUT_S = 60.0
MAX_IDLE_TIMEOUT_S = 86400.0
EDGE_IDLE_TIMEOUT_S = 300.0
"""The gateway's: a connection that carried no call for this long is closed (GOAWAY), however
many frames it sends; the services behind it keep their connections (their callers are ours)."""
"""The others' (grpc's own default): their callers reach them through Toxiproxy, whose latency
and timeout toxics hold a SETTINGS ACK as long as they hold anything else."""


def _addr(name: str, help: str) -> settings.Var[str | None]:
    return settings.Var(name, settings.address, None, help)


LISTEN_ADDR = _addr("LISTEN_ADDR", "the public gRPC port (default 127.0.0.1:<topology port>)")
ADMIN_ADDR = _addr("ADMIN_ADDR", "fault and policy admin gRPC; keep it on loopback")
METRICS_ADDR = _addr("METRICS_ADDR", "Prometheus /metrics over HTTP")
ADMIN_TOKEN: settings.Var[str | None] = settings.Var(
    TOKEN_ENV,
    settings.text,
    None,
    "the bearer token admin calls must carry, 16..512 URL-safe characters",
)
INTERNAL_TOKEN: settings.Var[str | None] = settings.Var(
    INTERNAL_TOKEN_ENV,
    settings.text,
    None,
    "the bearer token calls between services carry, 16..512 URL-safe characters",
)
GRACE_S = settings.Var(
    "SHUTDOWN_GRACE_S",
    settings.number_in(0, MAX_GRACE_S),
    5.0,
    "how long SIGTERM waits for in-flight calls",
)
MAX_MESSAGE = settings.Var(
    "MAX_MESSAGE_BYTES",
    settings.integer_in(MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES),
    1024 * 1024,
    "largest request or response accepted",
)
MAX_CONNS = settings.Var(
    "MAX_CONNECTIONS",
    settings.integer_in(1, MAX_CONNECTIONS),
    4096,
    "connections the public port holds at once",
)
ADMIN_MAX_CONNS = settings.Var(
    "ADMIN_MAX_CONNECTIONS",
    settings.integer_in(1, MAX_CONNECTIONS),
    64,
    "connections the admin port holds at once",
)
HANDSHAKE_TIMEOUT = settings.Var(
    "HANDSHAKE_TIMEOUT_S",
    settings.number_in(0, MAX_HANDSHAKE_TIMEOUT_S, above=True, unit="seconds"),
    5.0,
    "how long a new connection may take to say HTTP/2 (and finish TLS)",
)
SETTINGS_ACK_TIMEOUT: settings.Var[float | None] = settings.Var(
    "SETTINGS_ACK_TIMEOUT_S",
    settings.number_in(0, MAX_SETTINGS_ACK_TIMEOUT_S, above=True, unit="seconds"),
    None,
    "how long a peer may take to ACK the server's SETTINGS (gateway 5, others 60)",
)
MAX_CONNS_PER_PEER = settings.Var(
    "MAX_CONNECTIONS_PER_PEER",
    settings.integer_in(1, MAX_CONNECTIONS),
    512,
    "connections one source address holds on the public port (with PUBLIC_FRONT)",
)
IDLE_TIMEOUT: settings.Var[float | None] = settings.Var(
    "CONNECTION_IDLE_TIMEOUT_S",
    settings.number_in(0, MAX_IDLE_TIMEOUT_S, above=True, unit="seconds"),
    None,
    "how long a public connection may carry no call before it closes (gateway 300, others never)",
)
PUBLIC_FRONT: settings.Var[bool | None] = settings.Var(
    "PUBLIC_FRONT",
    settings.flag,
    None,
    "the public port behind the connection relay (gateway on, others off)",
)


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
    max_connections: int
    """MAX_CONNECTIONS: connections the public port holds at once, 1..1000000; grpc core closes
    the ones past it as soon as it accepts them. Default 4096 (serve() lowers it to what the
    descriptor limit leaves room for). grpc core has no per-peer cap; with PUBLIC_FRONT the
    relay holds this many and closes the longest silent one past it, and
    MAX_CONNECTIONS_PER_PEER caps each source address."""
    max_connections_per_peer: int
    """MAX_CONNECTIONS_PER_PEER: connections one source address holds on the public port when
    the relay owns it (PUBLIC_FRONT), 1..1000000; past it that address's longest silent
    connection is closed. Default 512."""
    public_front: bool
    """PUBLIC_FRONT: the public port owned by the connection relay
    (grpc_resilience_mesh.services.runtime.front), which caps connections per source address and
    header bytes before the SETTINGS ACK. Default on for the gateway (its clients come from
    outside), off for the services behind it."""
    admin_max_connections: int
    """ADMIN_MAX_CONNECTIONS: the same for ADMIN_ADDR, 1..1000000. Default 64."""
    handshake_timeout_s: float
    """HANDSHAKE_TIMEOUT_S: how long a new connection may take to send its HTTP/2 preface and
    SETTINGS (and finish TLS) before it is closed, above 0 up to 120. Default 5 s (grpc's own
    default is 120 s)."""
    settings_ack_timeout_s: float
    """SETTINGS_ACK_TIMEOUT_S: how long a peer may take to ACK the server's HTTP/2 SETTINGS
    before it is disconnected, above 0 up to 600. Until that ACK grpc core holds request headers
    to 16 MiB, not 16 KiB, so this is what bounds them in time. Default 5 s on the gateway, 60 s
    (grpc's own) on the services behind it, whose callers come through Toxiproxy."""
    idle_timeout_s: float | None
    """CONNECTION_IDLE_TIMEOUT_S: how long a connection to the public port may carry no call
    before grpc closes it with a GOAWAY (`grpc.max_connection_idle_ms`; a gRPC client reconnects
    on its next call), above 0 up to 86400. Default 300 s on the gateway, whose clients come
    from outside; None (never) on the services behind it."""
    dependencies: Mapping[str, str]
    """<CALLEE>_ADDR for each edge leaving this service, e.g. PROFILE_ADDR: HOST:PORT, or the
    replicas' addresses separated by commas (grpc_aio_resilience.channel balances over them)."""
    admin_token: str | None = field(default=None, repr=False)
    """MESH_ADMIN_TOKEN: the bearer token admin calls must carry
    (grpc_resilience_mesh.services.runtime.admin_auth), 16..512 URL-safe characters. Default unset:
    the admin port is open to whoever reaches it."""
    internal_token: str | None = field(default=None, repr=False)
    """MESH_INTERNAL_TOKEN: the bearer token every call between services carries and every service
    but the gateway requires (grpc_resilience_mesh.services.runtime.internal_auth), 16..512 URL-safe
    characters. Default unset: the services behind the gateway answer whoever reaches them."""

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServiceConfig:
        spec: ServiceSpec = service(name)
        env = settings.env_or_os(environ)
        # Read in the order they are listed, so the first bad one is the one named.
        listen, admin, metrics = (v.read(env) for v in (LISTEN_ADDR, ADMIN_ADDR, METRICS_ADDR))
        policy, token, grace_s = POLICY.read(env), ADMIN_TOKEN.read(env), GRACE_S.read(env)
        max_message, max_conns = MAX_MESSAGE.read(env), MAX_CONNS.read(env)
        admin_conns, handshake = ADMIN_MAX_CONNS.read(env), HANDSHAKE_TIMEOUT.read(env)
        ack = SETTINGS_ACK_TIMEOUT.read(env)
        per_peer, idle = MAX_CONNS_PER_PEER.read(env), IDLE_TIMEOUT.read(env)
        front = PUBLIC_FRONT.read(env)
        deps = {
            e.dependency: settings.read(
                env,
                e.addr_env,
                settings.addresses,
                f"127.0.0.1:{service(e.dependency).port}",
            )
            for e in edges_from(name)
        }
        return cls(
            name=name,
            listen_addr=listen or f"127.0.0.1:{spec.port}",
            admin_addr=admin or f"127.0.0.1:{spec.admin_port}",
            metrics_addr=metrics or f"127.0.0.1:{spec.metrics_port}",
            policy=policy,
            grace_s=grace_s,
            max_message_bytes=max_message,
            max_connections=max_conns,
            max_connections_per_peer=per_peer,
            public_front=name == "gateway" if front is None else front,
            admin_max_connections=admin_conns,
            handshake_timeout_s=handshake,
            settings_ack_timeout_s=ack
            or (EDGE_SETTINGS_ACK_TIMEOUT_S if name == "gateway" else INNER_SETTINGS_ACK_TIMEOUT_S),
            idle_timeout_s=idle or (EDGE_IDLE_TIMEOUT_S if name == "gateway" else None),
            dependencies=deps,
            admin_token=admin_token(token),
            internal_token=internal_token(INTERNAL_TOKEN.read(env)),
        )
