"""CPU per call of each server layer and of one edge's client side, in-process and without gRPC.

`mesh bench mesh` says how much the mesh costs over the floor; this says where, in us of thread CPU
per call: each layer of the server chain (`grpc_resilience_mesh.services.runtime.server_chain`)
alone around a servicer that answers at once, the chain's handler lookup and the whole chain; then
the gateway -> profile edge's interceptor and pipeline over a continuation that answers at once, and
each strategy's share (the pipeline without it). The full policy, a real MeshMetrics on the bus (its
listener runs for every event, as in a service), a context that answers from fields. Each figure is
the fastest of `repeats` runs of `calls` calls: on a shared machine the fastest is the least
disturbed. gRPC itself (the wire, its metadata and trailers) is not in these figures; `mesh bench
overhead` measures calls over it.

`python -m grpc_resilience_mesh.bench.layers [--calls N] [--repeats R] [--json FILE]`
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import grpc
import grpc.aio
from prometheus_client import CollectorRegistry

from grpc_aio_resilience import (
    CRITICALITY_KEY,
    Criticality,
    EventBus,
    ResilienceInterceptor,
    SystemClock,
    fate_listener,
    set_criticality,
)
from grpc_aio_resilience import pipeline as pipelines
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.runtime.server_chain import ServerChain, server_layers
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.v1 import profile_pb2

METHOD = "/mesh.v1.ProfileService/GetProfile"
METADATA = (("user-agent", "grpc-python-asyncio"), (CRITICALITY_KEY, "CRITICAL"))
REPLY = profile_pb2.GetProfileResponse(
    profile=profile_pb2.Profile(user_id="u1", display_name="Ada", interests=["books", "tea"])
)
REQUEST = profile_pb2.GetProfileRequest(user_id="u-0001")


class _Context:
    """What the layers read of a grpc.aio ServicerContext, answered from fields."""

    def __init__(self) -> None:
        self._trailers: tuple[tuple[str, str], ...] = ()

    def time_remaining(self) -> float:
        return 0.25

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return METADATA

    def code(self) -> None:
        return None

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._trailers

    def set_trailing_metadata(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._trailers = metadata


class _Details:
    method = METHOD
    invocation_metadata = METADATA


class _AnsweredCall:
    """A finished call: awaiting it gives the reply."""

    def __await__(self) -> Generator[Any, None, profile_pb2.GetProfileResponse]:
        if False:  # a generator that never suspends
            yield
        return REPLY

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.OK


async def _servicer(request: Any, context: Any) -> profile_pb2.GetProfileResponse:
    return REPLY


async def _answer(details: Any, request: Any) -> _AnsweredCall:
    return _AnsweredCall()


async def per_call_us(call: Callable[[], Awaitable[Any]], calls: int, repeats: int) -> float:
    """The fastest of `repeats` runs of `calls` awaited calls, in us of thread CPU per call."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        started = time.thread_time()
        for _ in range(calls):
            await call()
        best = min(best, (time.thread_time() - started) / calls * 1e6)
    return best


def _wrapped(handler: grpc.RpcMethodHandler | None) -> grpc.RpcMethodHandler:
    if handler is None:
        raise RuntimeError("a layer refused the benchmark's call")
    return handler


def _calling(behaviour: Any, arg: Any) -> Callable[[], Awaitable[Any]]:
    return lambda: behaviour(arg, _Context())


def _bus(service: str) -> tuple[EventBus, MeshMetrics]:
    bus = EventBus()
    metrics = MeshMetrics(CollectorRegistry(), service=service)
    bus.subscribe(metrics.listener)
    return bus, metrics


async def server_figures(calls: int, repeats: int) -> dict[str, float]:
    """Each layer's us per call over the servicer alone; the chain's lookup and whole call."""
    policy = load_policy("full", {})
    bus, metrics = _bus("profile")
    layers = server_layers(
        "profile", policy.server("profile"), bus, FaultTable(), count_fate=metrics.count_fate
    )
    base = grpc.unary_unary_rpc_method_handler(
        _servicer,
        request_deserializer=profile_pb2.GetProfileRequest.FromString,
        response_serializer=profile_pb2.GetProfileResponse.SerializeToString,
    )
    details, wire = _Details(), REQUEST.SerializeToString()
    alone = await per_call_us(lambda: _servicer(REQUEST, _Context()), calls, repeats)
    figures = {"servicer alone": alone}
    for layer in layers:
        handler = _wrapped(layer.wrap(base, details))
        arg: Any = REQUEST if handler.request_deserializer is not None else wire  # decoding's
        us = await per_call_us(_calling(handler.unary_unary, arg), calls, repeats)
        figures[type(layer).__name__] = us - alone

    async def lookup(_: Any) -> grpc.RpcMethodHandler:
        return base

    chain = ServerChain(layers)
    figures["chain: handler lookup"] = await per_call_us(
        lambda: chain.intercept_service(lookup, details), calls, repeats
    )
    whole = _wrapped(await chain.intercept_service(lookup, details)).unary_unary
    figures["chain: every layer"] = await per_call_us(_calling(whole, wire), calls, repeats) - alone
    return figures


def _edge(leave_out: str = "") -> ResilienceInterceptor:
    """The gateway -> profile edge of the full policy, without `leave_out`'s strategy."""
    policy = load_policy("full", {})
    edge = policy.edge("gateway_to_profile")
    bus, _ = _bus("gateway")
    bus.subscribe(fate_listener)
    order = pipelines.ORDERS[edge.order]
    pipelines.ORDERS[edge.order] = tuple(name for name in order if name != leave_out)
    try:
        pipeline = pipelines.build_pipeline(edge, dependency="profile", bus=bus)
    finally:
        pipelines.ORDERS[edge.order] = order
    return ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock())


async def client_figures(calls: int, repeats: int) -> dict[str, float]:
    """The edge's us per call, then each strategy's share of it."""
    set_criticality(Criticality.CRITICAL)  # as while serving a call
    details = grpc.aio.ClientCallDetails(METHOD, 0.8, None, None, None)

    async def edge_us(interceptor: ResilienceInterceptor) -> float:
        return await per_call_us(
            lambda: interceptor.intercept_unary_unary(_answer, details, REQUEST), calls, repeats
        )

    full = _edge()
    whole = await edge_us(full)
    figures = {"edge: interceptor and pipeline": whole}
    for name in full.pipeline.names:
        figures[name] = whole - await edge_us(_edge(leave_out=name))
    return figures


async def run_layers_bench(
    calls: int = 20_000, repeats: int = 7, freeze: bool = True
) -> dict[str, Any]:
    if freeze:
        gc.freeze()  # as a service freezes its start-up objects
    return {
        "calls": calls,
        "repeats": repeats,
        "server_us_per_call": await server_figures(calls, repeats),
        "client_us_per_call": await client_figures(calls, repeats),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args()
    if args.calls < 1 or args.repeats < 1:
        parser.error("--calls and --repeats must be at least 1")
    result = asyncio.run(run_layers_bench(args.calls, args.repeats))
    for side in ("server_us_per_call", "client_us_per_call"):
        for name, us in result[side].items():
            print(f"{name:34s} {us:6.2f} us")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
