"""How the benchmark's own server processes run: healthy on one port until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import signal

import grpc
from grpc_health.v1 import health, health_pb2_grpc


async def serve_until_terminated(server: grpc.aio.Server, listen: str, what: str) -> None:
    """Add health to `server`, bind `listen`, serve until SIGTERM or SIGINT, then stop."""
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    if server.add_insecure_port(listen) == 0:
        raise OSError(f"{what}: cannot bind {listen}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0)
