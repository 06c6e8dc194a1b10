"""THE server chain: the order of a server's layers (`SERVER_ORDER`; the client side's is
`grpc_aio_resilience.pipeline.PIPELINE_ORDER`), the layers built in that order (`server_layers`)
and how `serve()` mounts them: `grpc_aio_resilience.protect_server`, the chain without grpc.aio's
interceptor API (`ServerChain`, the same chain as one grpc.aio interceptor, is re-exported here).

A layer is a `grpc_aio_resilience.server_layer.ServerLayer`; the layers live with what they guard
(resilience, fault injection, telemetry, the gateway)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grpc_aio_resilience import (
    AssignCriticality,
    EventBus,
    ServerChain,
    ServerLayer,
    ServerPolicy,
    server_interceptors,
)
from grpc_resilience_mesh.services.exempt import EXEMPT
from grpc_resilience_mesh.services.faults.injection import FaultInterceptor, FaultTable
from grpc_resilience_mesh.services.runtime.decoding import RequestDecodingInterceptor
from grpc_resilience_mesh.services.telemetry.fate_layer import CountFate, FateLayer

SERVER_ORDER: tuple[str, ...] = (
    # Outermost -> innermost.
    "streams",  # writes a stream's messages itself: a reader that takes none in time, or a
    # stream without a client deadline past the server's, is ended and every layer inside
    # closes in the call's own task
    "decoding",  # a corrupt payload -> INVALID_ARGUMENT, before anything reads it
    "tracing",  # the server span (when tracing is on)
    "fates",  # each unary call's fate (grpc_aio_resilience.fates) on that span, in its trailers
    # and counted: outside every layer that may refuse a call, so refusals get theirs too
    "front",  # the service's own gate (the gateway's API key, the internal token behind it):
    # an unauthenticated call is not counted, so nobody can inflate the metrics under method
    # names of their choosing, and its criticality is never read
    "inbound",  # deadline and criticality capture for propagation (the gateway assigns its
    # own criticality per RPC), and counting of every call received
    "admission",  # the service's own admission (the gateway's per-key rate limit): inside
    # the counting, so its refusals show in mesh_server_calls_total
    "shedding",  # THE admission layer of this server (grpc_aio_resilience.shedding): the unary
    # calls' concurrency limit (static, vegas, gradient2, aimd) with its queue, deadline-aware and
    # sheddable-first refusals, and the streams' own limit; inside counting, so refusals show
    "faults",  # innermost: an injected delay or failure looks like a slow or failing handler
)
"""Slots a service does not fill are left out; the rest keep this order (pinned by a test)."""


def server_layers(
    service_name: str,
    policy: ServerPolicy,
    bus: EventBus,
    faults: FaultTable,
    *,
    tracing: Sequence[ServerLayer] = (),
    front: Sequence[ServerLayer] = (),
    admission: Sequence[ServerLayer] = (),
    assign_criticality: AssignCriticality | None = None,
    count_fate: CountFate | None = None,
) -> list[ServerLayer]:
    """The server's layers, outermost first, in `SERVER_ORDER`: the library's three
    (`server_interceptors`, FaultAdmin exempt as health is) with the mesh's between them."""
    library = server_interceptors(
        service_name, policy, bus, exempt=EXEMPT, assign_criticality=assign_criticality
    )
    slots: dict[str, Sequence[ServerLayer]] = {
        "streams": (library.streams,),
        "decoding": (RequestDecodingInterceptor(),),
        "tracing": tracing,
        "fates": (FateLayer(service_name, bus, count_fate),),
        "front": front,
        "inbound": (library.inbound,),
        "admission": admission,
        "shedding": (library.shedding,),
        "faults": (FaultInterceptor(service_name, faults, bus),),
    }
    return chain_in_order(slots)


def chain_in_order(slots: Mapping[str, Sequence[ServerLayer]]) -> list[ServerLayer]:
    """The slots' layers in `SERVER_ORDER`, the one place the order is written: a slot it does
    not name is an error, not a layer silently left out or put anywhere."""
    unknown = set(slots) - set(SERVER_ORDER)
    if unknown:
        raise ValueError(f"server layer slots not in SERVER_ORDER: {sorted(unknown)}")
    return [layer for slot in SERVER_ORDER for layer in slots.get(slot, ())]


__all__ = ["SERVER_ORDER", "ServerChain", "chain_in_order", "server_layers"]
