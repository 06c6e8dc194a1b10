"""serve(): one grpc.aio server per service with health, reflection, admin, metrics and a
graceful stop on SIGTERM (stop accepting, drain in-flight calls, then exit)."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from grpc_aio_resilience import (
    AssignCriticality,
    EventBus,
    ServerLayer,
    SheddingInterceptor,
    StreamGuard,
    protect_server,
)
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.runtime.admin_server import start_admin
from grpc_resilience_mesh.services.runtime.collector import freeze_startup_objects
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.runtime.connections import (
    ConnectionCaps,
    ConnectionWatch,
    ConnectionWatches,
    connection_options,
    idle_options,
)
from grpc_resilience_mesh.services.runtime.edges import Edge, Edges, EdgeWiring
from grpc_resilience_mesh.services.runtime.front import RELAY_DESCRIPTORS, Front, front_for, listen
from grpc_resilience_mesh.services.runtime.grpc_options import (
    bind,
    exclusive_port_options,
    message_size_options,
    pending_call_options,
)
from grpc_resilience_mesh.services.runtime.internal_auth import internal_gate, internal_metadata
from grpc_resilience_mesh.services.runtime.log_limit import (
    limit_ended_call_logs,
    limit_invalid_metadata_logs,
)
from grpc_resilience_mesh.services.runtime.logging import setup_logging
from grpc_resilience_mesh.services.runtime.policy_admin import PolicyAdminServicer
from grpc_resilience_mesh.services.runtime.reflection import enable_reflection
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.runtime.tls import MeshTls
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing, server_tracing

log = logging.getLogger("grpc_resilience_mesh.services.runtime")

S = TypeVar("S")


@dataclass
class Runtime:
    """What a service's builder gets: its config, policy, event bus, faults, telemetry and its
    outbound edges (grpc_resilience_mesh.services.runtime.edges)."""

    config: ServiceConfig
    policy: MeshPolicy
    bus: EventBus
    faults: FaultTable
    metrics: MeshMetrics
    tracing: MeshTracing | None = None
    tls: MeshTls | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    """The environment the service was started with (for a service's own settings)."""
    policy_hooks: list[Callable[[MeshPolicy], None]] = field(default_factory=list)
    edges: Edges = field(init=False)
    """Its outbound edges, one per dependency, made by `edge()`."""

    def __post_init__(self) -> None:
        self.edges = Edges(self.edge_wiring())

    def edge_wiring(self) -> EdgeWiring:
        return EdgeWiring(
            self.config.name,
            self.config.dependencies,
            self.bus,
            self.config.max_message_bytes,
            self.config.grace_s,
            tls=self.tls,
            tracing=self.tracing,
            credential=internal_metadata(self.config.internal_token),
        )

    def edge(self, dependency: str, make_stub: Callable[[grpc.aio.Channel], S]) -> Edge[S]:
        """The edge to `dependency`, with a stub `make_stub` makes: hold the edge and call
        `edge.stub`, since a policy swap may give the edge a new channel and stub."""
        return self.edges.open(dependency, make_stub, self.policy)

    def on_policy(self, hook: Callable[[MeshPolicy], None]) -> None:
        """Call `hook` with the new policy whenever PolicyAdmin replaces it."""
        self.policy_hooks.append(hook)

    def apply_policy(self, policy: MeshPolicy) -> None:
        """Swap every edge's pipeline (fresh breakers, budgets, bulkheads) and tell the hooks;
        the policy admin's swap function."""
        self.edges.swap(policy)
        self.policy = policy
        for hook in self.policy_hooks:
            hook(policy)


@dataclass
class Service:
    """A built service: how to register it, and what to close on the way out."""

    names: Sequence[str]
    """Full service names, e.g. mesh.v1.ProfileService: health and reflection list them."""
    register: Callable[[grpc.aio.Server], None]
    close: Callable[[], Awaitable[None]] | None = None
    front: Sequence[ServerLayer] = ()
    """The service's own gate, before call counting (the gateway's API key check)."""
    admission: Sequence[ServerLayer] = ()
    """The service's own admission, inside call counting (the gateway's per-key rate limit)."""
    criticality: AssignCriticality | None = None
    """The service's own criticality per RPC, ignoring its callers' (the gateway's, from
    policy); None: each call keeps the `resilience-criticality` its caller sent."""
    own_traces: bool = False
    """Each call starts a trace of its own instead of continuing its caller's traceparent (the
    gateway with MESH_PUBLIC_TRACEPARENT=link: its callers are outsiders)."""


def _update_server_layer(
    layer: SheddingInterceptor | StreamGuard, name: str, policy: MeshPolicy
) -> None:
    layer.update(policy.server(name))


async def serve(
    name: str,
    build: Callable[[Runtime], Awaitable[Service]],
    environ: Mapping[str, str] | None = None,
    stop_event: asyncio.Event | None = None,
) -> None:
    """Run service `name` until SIGTERM/SIGINT (or `stop_event`), then stop gracefully."""
    env = settings.env_or_os(environ)
    config = ServiceConfig.from_env(name, env)
    _setup_process(name, env)
    per_public = RELAY_DESCRIPTORS if config.public_front else 1
    caps = ConnectionCaps.at_start(config.max_connections, config.admin_max_connections, per_public)
    runtime = _runtime(config, env)
    built = await build(runtime)
    front = front_for(config, runtime.tls, caps.public)
    server, health_servicer, port = _public_server(runtime, built, caps.public, front)
    await server.start()
    if front is not None:
        port = await _listen_in_front(front, server, config.listen_addr)
    try:
        side = await _start_side_servers(runtime, server, port, caps, watch_public=front is None)
    except ConfigError:
        if front is not None:
            await front.close()
        raise
    await _announce_serving(health_servicer, built, runtime, side)
    await _until_stopped(stop_event)
    log.info("draining", extra={"grace_s": config.grace_s})
    await side.stop_watching()
    await health_servicer.enter_graceful_shutdown()
    await side.admin.stop(0)
    if front is not None:
        front.stop_accepting()
    await server.stop(config.grace_s)
    if front is not None:
        await front.close()
    await _close(runtime, built)
    log.info("stopped")


def _setup_process(name: str, env: Mapping[str, str]) -> None:
    """JSON logs, and grpc's tracebacks a caller can provoke (non-UTF-8 metadata, an answer
    to a call already ended) cut to one short line per interval."""
    setup_logging(name, env)
    limit_invalid_metadata_logs()
    limit_ended_call_logs()


@dataclass
class _SideServers:
    """What runs beside the public port: the loopback admin, /metrics, the connection caps'
    watches."""

    admin: grpc.aio.Server
    metrics_port: int
    watches: ConnectionWatches

    async def stop_watching(self) -> None:
        await self.watches.stop()


async def _listen_in_front(front: Front, server: grpc.aio.Server, addr: str) -> int:
    """The relay on the public address (grpc_resilience_mesh.services.runtime.front); on a bad
    address the server stops and the ConfigError goes on."""
    try:
        return await listen(front, "LISTEN_ADDR", addr)
    except ConfigError:
        await server.stop(0)
        await front.close()
        raise


async def _start_side_servers(
    runtime: Runtime,
    server: grpc.aio.Server,
    port: int,
    caps: ConnectionCaps,
    watch_public: bool = True,
) -> _SideServers:
    """The admin server (faults and the policy swap) and /metrics; on a bad address, what
    already started stops and the ConfigError goes on."""
    config = runtime.config
    policy_admin = PolicyAdminServicer(lambda: runtime.policy, runtime.apply_policy)
    try:
        admin, admin_port = await start_admin(config, runtime.faults, policy_admin, caps.admin)
    except ConfigError:
        await server.stop(0)
        raise
    try:
        metrics_port = bind("METRICS_ADDR", config.metrics_addr, runtime.metrics.start_http)
    except ConfigError:
        await admin.stop(0)
        await server.stop(0)
        raise
    watches = ConnectionWatches(
        [
            *([ConnectionWatch("MAX_CONNECTIONS", port, caps.public)] if watch_public else []),
            ConnectionWatch("ADMIN_MAX_CONNECTIONS", admin_port, caps.admin),
        ]
    )
    watches.start()
    return _SideServers(admin, metrics_port, watches)


async def _announce_serving(
    health_servicer: health.aio.HealthServicer,
    built: Service,
    runtime: Runtime,
    side: _SideServers,
) -> None:
    for svc in (*built.names, ""):
        await health_servicer.set(svc, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "serving",
        extra={
            "listen": runtime.config.listen_addr,
            "admin": runtime.config.admin_addr,
            "metrics_port": side.metrics_port,
            "policy": runtime.policy.name,
        },
    )


def _runtime(config: ServiceConfig, env: Mapping[str, str]) -> Runtime:
    """The service's policy, event bus with its listeners (metrics, tracing), faults and TLS."""
    policy = load_policy(config.policy, env)
    bus = EventBus()
    metrics = MeshMetrics(CollectorRegistry(), service=config.name)
    bus.subscribe(metrics.listener)
    faults = FaultTable.from_env(env)
    tls = MeshTls.from_env(env)
    tracing = MeshTracing.from_env(config.name, env)
    if tracing is not None:
        bus.subscribe(tracing.listener)
    runtime = Runtime(config, policy, bus, faults, metrics, tracing=tracing, tls=tls, environ=env)
    runtime.on_policy(lambda _policy: metrics.breakers_replaced())
    metrics.watch_pipelines(runtime.edges.pipelines)
    metrics.watch_replicas(runtime.edges.routers)
    return runtime


def _public_server(
    runtime: Runtime, built: Service, max_connections: int, front: Front | None = None
) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """The service's own port: its servicers behind the server chain, health and reflection;
    with `front`, on the relay's unix socket (grpc's cap there only a backstop: the relay
    holds `max_connections`, and closes some of them as new ones arrive)."""
    config, name = runtime.config, runtime.config.name
    layers = server_layers(
        name,
        runtime.policy.server(name),
        runtime.bus,
        runtime.faults,
        tracing=server_tracing(runtime.tracing, built.own_traces),
        front=(*internal_gate(name, config.internal_token), *built.front),
        admission=built.admission,
        assign_criticality=built.criticality,
        count_fate=runtime.metrics.count_fate,
    )
    for layer in layers:
        if isinstance(layer, SheddingInterceptor | StreamGuard):
            runtime.on_policy(partial(_update_server_layer, layer, name))
    plain = grpc.aio.server(
        options=[
            *message_size_options(config.max_message_bytes),
            *exclusive_port_options(),
            *pending_call_options(),
            *connection_options(
                max_connections if front is None else 2 * max_connections,
                config.handshake_timeout_s,
                config.settings_ack_timeout_s,
            ),
            *idle_options(config.idle_timeout_s),
        ],
    )
    # Everything registered below (the services, health, reflection) is behind the chain, which
    # exempts what it must; no interceptor API per call (grpc_aio_resilience.server_mount).
    server = protect_server(plain, layers)
    built.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    enable_reflection((*built.names, health.SERVICE_NAME), server)  # this port's files only
    tls = runtime.tls
    if front is not None:
        port = bind("LISTEN_ADDR", front.upstream_addr, server.add_insecure_port)
    elif tls is not None and tls.serves_tls(name):
        credentials = tls.server_credentials(name)
        port = bind(
            "LISTEN_ADDR", config.listen_addr, lambda a: server.add_secure_port(a, credentials)
        )
    else:
        port = bind("LISTEN_ADDR", config.listen_addr, server.add_insecure_port)
    return server, health_servicer, port


async def _until_stopped(stop_event: asyncio.Event | None) -> None:
    stop = stop_event or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _close(runtime: Runtime, built: Service) -> None:
    """What is left once the servers have drained: metrics, channels, the service, tracing."""
    await runtime.metrics.stop_http()  # after the drain: a scrape during it sees the last calls
    await runtime.edges.close()  # with the channels a swap replaced, still draining
    if built.close is not None:
        await built.close()
    if runtime.tracing is not None:
        await runtime.tracing.shutdown()


def run(name: str, build: Callable[[Runtime], Awaitable[Service]]) -> None:
    """Entry point of each service's __main__: exit 0 after a graceful stop; on bad config, one
    line on stderr naming the variable (never a traceback) and exit 2."""
    import sys

    from grpc_resilience_mesh.services.policy.loading import PolicyError

    freeze_startup_objects()  # imports are done: full collections need not walk what they made
    try:
        asyncio.run(serve(name, build))
    except (ConfigError, PolicyError) as err:
        print(f"{name}: configuration error: {' '.join(str(err).split())}", file=sys.stderr)
        raise SystemExit(2) from None
