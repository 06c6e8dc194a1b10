"""What the chain's three services share: where they listen and call (the environment `mesh
chaos run` sets), and a server behind the library's layers with gRPC health and reflection.

Health lets a runner wait for SERVING instead of guessing; reflection lets a load generator
(`mesh chaos run`, grpcurl) build requests without the proto files.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import grpc.aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from grpc_aio_resilience import EventBus, ServerLayer, ServerPolicy, protect_server
from grpc_aio_resilience import server_interceptors as library_layers

POLICY = ServerPolicy(max_in_flight=64)  # the 65th call in flight at once is shed
STOP_GRACE_S = 1.0  # calls in flight get this long to finish after SIGTERM
Reply = TypeVar("Reply")


def address(name: str, default: str, environ: Mapping[str, str] = os.environ) -> str:
    """`environ[name]`, or `default` when it is unset or empty (a service run by hand)."""
    return environ.get(name) or default


async def relayed(call: Awaitable[Reply], context: grpc.aio.ServicerContext) -> Reply:
    """The dependency's reply; its failure answered to our caller with its own code.

    grpc.aio answers UNKNOWN for an exception escaping a handler, and then a caller cannot
    tell an outage downstream (UNAVAILABLE) or a spent deadline from a bug here."""
    try:
        return await call
    except grpc.aio.AioRpcError as err:
        await context.abort(err.code(), err.details() or "")
        raise  # abort raised already


Register = Callable[[grpc.aio.Server], None]


async def serve(
    name: str,
    service: str,
    register: Register,
    listen_addr: str,
    *,
    extra_layers: Sequence[ServerLayer] = (),
) -> None:
    """Serve `service` (`chain.v1.Front`, ...) on `listen_addr` until SIGTERM or SIGINT.

    `register` adds the servicer; `extra_layers` run inside the library's three (a fault layer
    there looks like a slow or failing handler to every layer outside it)."""
    layers = (*library_layers(name, POLICY, EventBus()), *extra_layers)
    server = protect_server(grpc.aio.server(), layers)
    register(server)
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    served = (service, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(served, server)
    server.add_insecure_port(listen_addr)
    await server.start()
    for each in ("", service):
        await checker.set(each, health_pb2.HealthCheckResponse.SERVING)
    print(f"{name} serving {service} on {listen_addr}", flush=True)
    await _until_signalled()
    await checker.enter_graceful_shutdown()
    await server.stop(STOP_GRACE_S)


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
