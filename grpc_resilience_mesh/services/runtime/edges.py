"""A service's outbound edges: per dependency one Edge (its channel, the interceptor holding its
pipeline, the replica router, the stub servicers call), and the policy swap over all of them.

Most of a policy changes in place (the interceptor's pipeline, the replica router's
detector). gRPC's own retries do not: they live in the channel's service config, fixed when
the channel is made. A swap that changes them gives the edge a new channel, made the way the
first one was, and a new stub over it. Servicers call `edge.stub.Method(...)`, so their next
call takes the new channel, and pay one attribute read per call for it; the old channel keeps
the calls already on it, retries included, until they end (at most the service's shutdown
grace), then closes (grpc_resilience_mesh.services.runtime.edge_channels).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import grpc.aio

from grpc_aio_resilience import (
    Bulkhead,
    EdgePolicy,
    EventBus,
    Pipeline,
    ReplicaRouter,
    ResilienceInterceptor,
    SystemClock,
    build_pipeline,
    resilient_channel,
)
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.runtime.edge_channels import Retirements, close_edge_channel
from grpc_resilience_mesh.services.runtime.grpc_options import message_size_options
from grpc_resilience_mesh.services.runtime.tls import MeshTls
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing
from grpc_resilience_mesh.services.topology import service

S = TypeVar("S")


class Edge(Generic[S]):
    """One dependency of this service: hold this, and call `edge.stub`, never a channel."""

    def __init__(
        self,
        dependency: str,
        policy: EdgePolicy,
        interceptor: ResilienceInterceptor,
        channel: grpc.aio.Channel,
        make_stub: Callable[[grpc.aio.Channel], S],
    ) -> None:
        self.dependency = dependency
        self.policy = policy
        self.interceptor = interceptor
        """The edge's one interceptor, for its whole life: a swap replaces its pipeline."""
        self.channel = channel
        self._make_stub = make_stub
        self.stub: S = make_stub(channel)
        self._tell_router()

    def _tell_router(self) -> None:
        """The replica router (if any) learns the edge's attempt timeout: an attempt sent with
        less ran on its caller's deadline, which ejects no replica (classify.callers_deadline)."""
        if self.router is not None:
            self.router.attempt_s = self.policy.deadline.attempt_s

    @property
    def pipeline(self) -> Pipeline:
        return self.interceptor.pipeline

    @property
    def router(self) -> ReplicaRouter | None:
        """The replica router of the edge's channel, when the target lists several replicas."""
        return self.interceptor.router

    @property
    def retries(self) -> bool:
        """Whether calls on this edge are retried here (so our callers need not retry them)."""
        return self.policy.retry.max_attempts > 1 or self.policy.native_retry.enabled

    def use(
        self, policy: EdgePolicy, pipeline: Pipeline, channel: grpc.aio.Channel | None
    ) -> grpc.aio.Channel | None:
        """Protect the next calls with `pipeline`, on `channel` if given (a new stub over it);
        the channel it replaced, which the caller retires, or None."""
        self.policy = policy
        self.interceptor.pipeline = pipeline
        if channel is None:
            if self.router is not None:  # ejection on or off, in place
                self.router.use(policy.outlier)
            self._tell_router()
            return None
        old, self.channel = self.channel, channel
        self.stub = self._make_stub(channel)  # its router, if any, is new, with this outlier
        self._tell_router()
        return old


@dataclass(frozen=True)
class EdgeWiring:
    """How a service's edges are made: where each dependency is, and what every edge shares."""

    caller: str
    addresses: Mapping[str, str]
    """Each dependency's target (`host:port`, or replicas separated by commas)."""
    bus: EventBus
    max_message_bytes: int
    grace_s: float
    """How long a channel a swap replaced may drain."""
    tls: MeshTls | None = None
    tracing: MeshTracing | None = None
    credential: tuple[tuple[str, str], ...] = ()
    """Metadata every attempt on every edge carries: the internal token's header, if any."""


class Edges:
    """Every outbound edge of one service, and the one way they are built and swapped."""

    def __init__(self, wiring: EdgeWiring) -> None:
        self.wiring = wiring
        self._edges: dict[str, Edge[object]] = {}
        self._pools: dict[str, Bulkhead] = {}
        self.retiring = Retirements()

    def __iter__(self) -> Iterator[Edge[object]]:
        return iter(list(self._edges.values()))

    def __getitem__(self, dependency: str) -> Edge[object]:
        return self._edges[dependency]

    def edge_policy(self, policy: MeshPolicy, dependency: str) -> EdgePolicy:
        return policy.edge(f"{self.wiring.caller}_to_{dependency}")

    def open(
        self, dependency: str, make_stub: Callable[[grpc.aio.Channel], S], policy: MeshPolicy
    ) -> Edge[S]:
        """The edge to `dependency` under `policy`: its pipeline, interceptor and channel, and
        a stub `make_stub` makes over the channel. One edge per dependency."""
        if dependency in self._edges:
            raise ValueError(f"{self.wiring.caller}: the edge to {dependency} is already open")
        edge_policy = self.edge_policy(policy, dependency)
        interceptor = ResilienceInterceptor(
            self._pipeline(dependency, edge_policy, self._pools, _gated(policy, dependency)),
            dependency=dependency,
            clock=SystemClock(),
        )
        channel = self._channel(dependency, interceptor, edge_policy)
        edge = Edge(dependency, edge_policy, interceptor, channel, make_stub)
        self._edges[dependency] = edge  # type: ignore[assignment]  # held, never called, here
        return edge

    def swap(self, policy: MeshPolicy) -> None:
        """Every edge under `policy` (fresh breakers, budgets, bulkheads), all built before any
        is applied. Calls in flight finish under what they started with."""
        pools: dict[str, Bulkhead] = {}
        plans: list[tuple[Edge[object], EdgePolicy, Pipeline, grpc.aio.Channel | None]] = []
        for edge in self._edges.values():
            edge_policy = self.edge_policy(policy, edge.dependency)
            pipeline = self._pipeline(
                edge.dependency, edge_policy, pools, _gated(policy, edge.dependency)
            )
            channel = None
            if edge_policy.native_retry != edge.policy.native_retry:
                channel = self._channel(edge.dependency, edge.interceptor, edge_policy)
            plans.append((edge, edge_policy, pipeline, channel))
        for edge, edge_policy, pipeline, channel in plans:
            old = edge.use(edge_policy, pipeline, channel)
            if old is not None:
                self.retiring.retire(old, self.wiring.grace_s)
        self._pools = pools

    def pipelines(self) -> dict[str, Pipeline]:
        return {edge.dependency: edge.pipeline for edge in self._edges.values()}

    def routers(self) -> dict[str, ReplicaRouter | None]:
        return {edge.dependency: edge.router for edge in self._edges.values()}

    async def close(self) -> None:
        """Stop the drains of replaced channels, then close every edge's channel."""
        await self.retiring.close()
        for edge in self._edges.values():
            await close_edge_channel(edge.channel)

    def _pipeline(
        self, dependency: str, policy: EdgePolicy, pools: dict[str, Bulkhead], gated: bool
    ) -> Pipeline:
        """The one way an edge's pipeline is built, at start and on every policy swap; `gated`:
        the dependency's servers have an intake gate, so each attempt sends its deadline. The
        build warns of its traps (grpc_aio_resilience.traps) once per process, not per swap."""
        tracing = self.wiring.tracing
        return build_pipeline(
            policy,
            dependency=dependency,
            bus=self.wiring.bus,
            clock=SystemClock(),
            bulkhead_pools=pools,
            attempt_observer=tracing.attempt_observer if tracing else None,
            call_observer=tracing.call_observer if tracing else None,
            wait_header=gated,
            carry=self.wiring.credential,
            services=(service(dependency).grpc_service,),
        )

    def _channel(
        self, dependency: str, interceptor: ResilienceInterceptor, policy: EdgePolicy
    ) -> grpc.aio.Channel:
        """The one way an edge's channel is made, at start and when a swap replaces it."""
        tls = self.wiring.tls
        return resilient_channel(
            self.wiring.addresses[dependency],
            interceptor,
            native_retry=policy.native_retry,
            options=[
                *message_size_options(self.wiring.max_message_bytes),
                *(tls.channel_options(dependency) if tls else ()),
            ],
            credentials=tls.channel_credentials() if tls else None,
            services=(service(dependency).grpc_service,),
            outlier=policy.outlier,
            bus=self.wiring.bus,
            dependency=dependency,
        )


def _gated(policy: MeshPolicy, dependency: str) -> bool:
    """Whether `dependency` has an intake gate under `policy` (grpc_aio_resilience.intake): only
    then does it read `resilience-timeout-ms`, so only then is it sent."""
    return policy.server(dependency).intake.discipline != "none"
