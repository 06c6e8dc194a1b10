"""THE place that declares the order of a server's interceptors (the client side's is
`mesh.resilience.pipeline.PIPELINE_ORDER`): `serve()` mounts this one list, as one ServerChain."""

from __future__ import annotations

from collections.abc import Sequence

from mesh.resilience.events import EventBus
from mesh.resilience.faults import FaultInterceptor, FaultTable
from mesh.resilience.handlers import ServerLayer
from mesh.resilience.inbound import AssignCriticality, InboundInterceptor
from mesh.resilience.policy import ServerPolicy
from mesh.resilience.shedding import SheddingInterceptor
from mesh.resilience.stream_guard import StreamGuard
from mesh.runtime.decoding import RequestDecodingInterceptor

SERVER_ORDER: tuple[str, ...] = (
    # Outermost -> innermost.
    "streams",  # writes a stream's messages itself: a reader that takes none in time, or a
    # stream without a client deadline past the server's, is ended and every layer inside
    # closes in the call's own task
    "decoding",  # a corrupt payload -> INVALID_ARGUMENT, before anything reads it
    "tracing",  # the server span (when tracing is on)
    "front",  # the service's own gate (the gateway's API key): an unauthenticated call is
    # not counted, so nobody can inflate the metrics under method names of their choosing
    "inbound",  # deadline and criticality capture for propagation (the gateway assigns its
    # own criticality per RPC), and counting of every call received
    "admission",  # the service's own admission (the gateway's per-key rate limit): inside
    # the counting, so its refusals show in mesh_server_calls_total
    "shedding",  # THE admission layer of this server (mesh.resilience.shedding): the unary
    # calls' concurrency limit (static, vegas, gradient2) with its queue, deadline-aware and
    # sheddable-first refusals, and the streams' own limit; inside counting, so refusals show
    "faults",  # innermost: an injected delay or failure looks like a slow or failing handler
)
"""Slots a service does not fill are left out; the rest keep this order (pinned by a test)."""


def server_interceptors(
    service_name: str,
    policy: ServerPolicy,
    bus: EventBus,
    faults: FaultTable,
    *,
    tracing: Sequence[ServerLayer] = (),
    front: Sequence[ServerLayer] = (),
    admission: Sequence[ServerLayer] = (),
    assign_criticality: AssignCriticality | None = None,
) -> list[ServerLayer]:
    """The server's interceptors, outermost first, in `SERVER_ORDER`."""
    return [
        StreamGuard(service_name, policy, bus),
        RequestDecodingInterceptor(),
        *tracing,
        *front,
        InboundInterceptor(service_name, bus, assign_criticality),
        *admission,
        SheddingInterceptor(service_name, policy, bus),
        FaultInterceptor(service_name, faults, bus),
    ]
