"""The server side as a user mounts it: the library's three server interceptors, outermost
first, for `grpc.aio.server(interceptors=...)`.

    server = grpc.aio.server(interceptors=server_interceptors("kv", ServerPolicy()))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.inbound import AssignCriticality, InboundInterceptor
from grpc_aio_resilience.server_layer import EXEMPT_PREFIXES
from grpc_aio_resilience.shedding import SheddingInterceptor
from grpc_aio_resilience.stream_guard import StreamGuard


class ServerInterceptors(NamedTuple):
    """StreamGuard, InboundInterceptor and SheddingInterceptor in the order they must run.

    The stream guard is outermost: it closes every layer inside it in the call's own task when
    a stream ends, and gives its place to a new stream when a reader stalls. The inbound layer
    settles the call's criticality before admission reads it, and counts refusals too."""

    streams: StreamGuard
    inbound: InboundInterceptor
    shedding: SheddingInterceptor

    def update(self, policy: ServerPolicy) -> None:
        """New limits for calls and streams arriving from now on (a policy swapped at runtime)."""
        self.streams.update(policy)
        self.shedding.update(policy)


def server_interceptors(
    service: str,
    policy: ServerPolicy | None = None,
    bus: EventBus | None = None,
    *,
    clock: Clock | None = None,
    exempt: Iterable[str] = EXEMPT_PREFIXES,
    assign_criticality: AssignCriticality | None = None,
) -> ServerInterceptors:
    """The interceptors protecting `service` (a name of your choosing: it names this server in
    events and in refusals' details) under `policy` (ServerPolicy's defaults without one),
    reporting to `bus` (a bus of their own without one). Methods starting with an
    `exempt` prefix (health and reflection by default) are never refused nor guarded."""
    policy = ServerPolicy() if policy is None else policy
    bus = EventBus() if bus is None else bus
    prefixes = tuple(exempt)
    streams = StreamGuard(service, policy, bus, exempt=prefixes)
    shedding = SheddingInterceptor(
        service,
        policy,
        bus,
        clock,
        make_stream_room=streams.end_longest_stalled,
        exempt=prefixes,
        inbound_outside=True,
    )
    inbound = InboundInterceptor(service, bus, assign_criticality, counted=shedding.counted)
    return ServerInterceptors(streams, inbound, shedding)
