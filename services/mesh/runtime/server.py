"""serve(): one grpc.aio server per service with health, reflection, admin, metrics and a
graceful stop on SIGTERM (stop accepting, drain in-flight calls, then exit)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from mesh.config_error import ConfigError
from mesh.resilience.bulkhead import Bulkhead
from mesh.resilience.channel import resilient_channel, router_of
from mesh.resilience.clock import SystemClock
from mesh.resilience.events import EventBus
from mesh.resilience.faults import FaultTable
from mesh.resilience.handlers import ServerChain, ServerLayer
from mesh.resilience.inbound import AssignCriticality
from mesh.resilience.interceptor import ResilienceInterceptor
from mesh.resilience.pipeline import Pipeline, build_pipeline
from mesh.resilience.policy import EdgePolicy, MeshPolicy, load_policy
from mesh.resilience.shedding import SheddingInterceptor
from mesh.resilience.stream_guard import StreamGuard
from mesh.runtime.admin_server import start_admin
from mesh.runtime.collector import freeze_startup_objects
from mesh.runtime.config import ServiceConfig
from mesh.runtime.connections import ConnectionCaps, ConnectionWatch, connection_options
from mesh.runtime.edge_channels import EdgeStubs, Retirements, close_edge_channel
from mesh.runtime.grpc_options import (
    bind,
    message_size_options,
    pending_call_options,
)
from mesh.runtime.interceptors import server_interceptors
from mesh.runtime.log_limit import limit_invalid_metadata_logs
from mesh.runtime.logging import setup_logging
from mesh.runtime.policy_admin import PolicyAdminServicer
from mesh.runtime.reflection import enable_reflection
from mesh.runtime.tls import MeshTls
from mesh.telemetry.metrics import MeshMetrics
from mesh.telemetry.tracing import MeshTracing, server_tracing
from mesh.topology import service

log = logging.getLogger("mesh.runtime")

S = TypeVar("S")


@dataclass
class Runtime:
    """What a service's builder gets: its config, policy, event bus and outbound channels."""

    config: ServiceConfig
    policy: MeshPolicy
    bus: EventBus
    faults: FaultTable
    metrics: MeshMetrics
    channels: list[grpc.aio.Channel] = field(default_factory=list)
    bulkhead_pools: dict[str, Bulkhead] = field(default_factory=dict)
    tracing: MeshTracing | None = None
    tls: MeshTls | None = None
    interceptors: dict[str, ResilienceInterceptor] = field(default_factory=dict)
    """The one interceptor of each outbound edge, by dependency: its pipeline is swappable."""
    policy_hooks: list[Callable[[MeshPolicy], None]] = field(default_factory=list)
    environ: Mapping[str, str] = field(default_factory=dict)
    """The environment the service was started with (for a service's own settings)."""
    edge_channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)
    """Each outbound edge's current channel (a swap of gRPC's own retries replaces it)."""
    stubs: EdgeStubs = field(default_factory=EdgeStubs)
    retiring: Retirements = field(default_factory=Retirements)

    def on_policy(self, hook: Callable[[MeshPolicy], None]) -> None:
        """Call `hook` with the new policy whenever PolicyAdmin replaces it."""
        self.policy_hooks.append(hook)

    def _pipeline(
        self, dependency: str, policy: EdgePolicy, pools: dict[str, Bulkhead]
    ) -> Pipeline:
        """The one way an edge's pipeline is built, at start and on every policy swap."""
        return build_pipeline(
            policy,
            dependency=dependency,
            bus=self.bus,
            clock=SystemClock(),
            bulkhead_pools=pools,
            attempt_observer=self.tracing.attempt_observer if self.tracing else None,
            call_observer=self.tracing.call_observer if self.tracing else None,
        )

    def apply_policy(self, policy: MeshPolicy) -> None:
        """Swap every edge's pipeline (fresh breakers, budgets, bulkheads) and tell the hooks.

        Every change applies in place; calls in flight finish under what they started with.
        An edge whose gRPC retries change (`native_retry`: the channel's service config) gets
        a new channel for its next calls (mesh.runtime.edge_channels).
        """
        pools: dict[str, Bulkhead] = {}
        pipelines: dict[str, Pipeline] = {}
        channels: dict[str, grpc.aio.Channel] = {}
        for dependency in self.interceptors:
            edge_policy = policy.edge(f"{self.config.name}_to_{dependency}")
            pipelines[dependency] = self._pipeline(dependency, edge_policy, pools)
            if edge_policy.native_retry != self.edge_policy(dependency).native_retry:
                channels[dependency] = self._channel(
                    dependency, self.interceptors[dependency], edge_policy
                )
        for dependency, interceptor in self.interceptors.items():
            interceptor.pipeline = pipelines[dependency]
            if dependency in channels:
                self._replace_channel(dependency, channels[dependency])
                continue  # its router, if any, is new, made with this policy's outlier
            router = router_of(interceptor)
            if router is not None:  # ejection on or off, in place
                router.use(policy.edge(f"{self.config.name}_to_{dependency}").outlier)
        self.bulkhead_pools = pools
        self.policy = policy
        for hook in self.policy_hooks:
            hook(policy)

    def _replace_channel(self, dependency: str, channel: grpc.aio.Channel) -> None:
        """New calls to `dependency` go on `channel`; the old one drains, then closes."""
        old = self.edge_channels[dependency]
        self.edge_channels[dependency] = channel
        self.channels[self.channels.index(old)] = channel
        self.stubs.repoint(dependency, channel)
        self.retiring.retire(old, self.config.grace_s)

    def edge_policy(self, dependency: str) -> EdgePolicy:
        return self.policy.edge(f"{self.config.name}_to_{dependency}")

    def retries_on(self, dependency: str) -> bool:
        """Whether calls to `dependency` are retried here (so our callers need not retry them)."""
        edge = self.edge_policy(dependency)
        return edge.retry.max_attempts > 1 or edge.native_retry.enabled

    def stub_to(self, dependency: str, make: Callable[[grpc.aio.Channel], S]) -> S:
        """`make(channel_to(dependency))`, kept pointing at the edge's current channel: hold
        this, not the channel, since a policy swap may give the edge a new one."""
        return self.stubs.add(dependency, make(self.channel_to(dependency)), make)

    def channel_to(self, dependency: str) -> grpc.aio.Channel:
        """A channel to `dependency` guarded by this edge's resilience pipeline (the edge's
        channel until a swap of gRPC's own retries replaces it: servicers use stub_to)."""
        policy = self.edge_policy(dependency)
        interceptor = ResilienceInterceptor(
            self._pipeline(dependency, policy, self.bulkhead_pools),
            dependency=dependency,
            clock=SystemClock(),
        )
        channel = self._channel(dependency, interceptor, policy)
        self.interceptors[dependency] = interceptor
        self.edge_channels[dependency] = channel
        self.channels.append(channel)
        return channel

    def _channel(
        self, dependency: str, interceptor: ResilienceInterceptor, policy: EdgePolicy
    ) -> grpc.aio.Channel:
        """The one way an edge's channel is made, at start and when a swap replaces it."""
        return resilient_channel(
            self.config.dependencies[dependency],
            interceptor,
            native_retry=policy.native_retry,
            options=[
                *message_size_options(self.config.max_message_bytes),
                *(self.tls.channel_options(dependency) if self.tls else ()),
            ],
            credentials=self.tls.channel_credentials() if self.tls else None,
            services=(service(dependency).grpc_service,),
            outlier=policy.outlier,
            bus=self.bus,
            dependency=dependency,
        )


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
    policy); None: each call keeps the `mesh-criticality` its caller sent."""


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
    env: Mapping[str, str] = os.environ if environ is None else environ
    config = ServiceConfig.from_env(name, env)
    setup_logging(name)
    caps = ConnectionCaps.at_start(config.max_connections, config.admin_max_connections)
    limit_invalid_metadata_logs()  # grpc logs a traceback per non-UTF-8 metadata value
    runtime = _runtime(config, env)
    built = await build(runtime)
    server, health_servicer, port = _public_server(runtime, built, caps.public)
    await server.start()
    try:
        admin, admin_port = await start_admin(
            config, runtime.faults, PolicyAdminServicer(runtime), caps.admin
        )
    except ConfigError:
        await server.stop(0)
        raise
    try:
        metrics_port = bind("METRICS_ADDR", config.metrics_addr, runtime.metrics.start_http)
    except ConfigError:
        await admin.stop(0)
        await server.stop(0)
        raise
    for svc in (*built.names, ""):
        await health_servicer.set(svc, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "serving",
        extra={
            "listen": config.listen_addr,
            "admin": config.admin_addr,
            "metrics_port": metrics_port,
            "policy": runtime.policy.name,
        },
    )
    watches = [
        ConnectionWatch("MAX_CONNECTIONS", port, caps.public),
        ConnectionWatch("ADMIN_MAX_CONNECTIONS", admin_port, caps.admin),
    ]
    for watch in watches:
        watch.start()
    await _until_stopped(stop_event)
    log.info("draining", extra={"grace_s": config.grace_s})
    for watch in watches:
        await watch.stop()
    await health_servicer.enter_graceful_shutdown()
    await admin.stop(0)
    await server.stop(config.grace_s)
    await _close(runtime, built)
    log.info("stopped")


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
    metrics.watch_pipelines(lambda: {d: i.pipeline for d, i in runtime.interceptors.items()})
    return runtime


def _public_server(
    runtime: Runtime, built: Service, max_connections: int
) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """The service's own port: its servicers behind the server chain, health and reflection."""
    config, name = runtime.config, runtime.config.name
    layers = server_interceptors(
        name,
        runtime.policy.server(name),
        runtime.bus,
        runtime.faults,
        tracing=server_tracing(runtime.tracing),
        front=built.front,
        admission=built.admission,
        assign_criticality=built.criticality,
    )
    for layer in layers:
        if isinstance(layer, SheddingInterceptor | StreamGuard):
            runtime.on_policy(partial(_update_server_layer, layer, name))
    server = grpc.aio.server(
        interceptors=[ServerChain(layers)],
        options=[
            *message_size_options(config.max_message_bytes),
            *pending_call_options(),
            *connection_options(
                max_connections, config.handshake_timeout_s, config.settings_ack_timeout_s
            ),
        ],
    )
    built.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    enable_reflection((*built.names, health.SERVICE_NAME), server)  # this port's files only
    tls = runtime.tls
    if tls is not None and tls.serves_tls(name):
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
    await runtime.retiring.close()  # channels a swap replaced, still draining
    for channel in runtime.channels:
        await close_edge_channel(channel)
    if built.close is not None:
        await built.close()
    if runtime.tracing is not None:
        await runtime.tracing.shutdown()


def run(name: str, build: Callable[[Runtime], Awaitable[Service]]) -> None:
    """Entry point of each service's __main__: exit 0 after a graceful stop; on bad config, one
    line on stderr naming the variable (never a traceback) and exit 2."""
    import sys

    from mesh.resilience.policy import PolicyError

    freeze_startup_objects()  # imports are done: full collections need not walk what they made
    try:
        asyncio.run(serve(name, build))
    except (ConfigError, PolicyError) as err:
        print(f"{name}: configuration error: {' '.join(str(err).split())}", file=sys.stderr)
        raise SystemExit(2) from None
