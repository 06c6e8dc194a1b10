"""Fixtures: a Toxiproxy server and a TCP echo server, each on its own thread and loop.

The embedded server runs on a background thread so that blocking clients (urllib,
toxiproxy-python, plain sockets) can drive it from the test thread without stalling its event
loop. A module marked with `BOTH_SERVERS` runs each test twice: against the embedded server and
against real Toxiproxy 2.12 (`make peers` builds it; the real half skips, saying so, without it),
and the embedded server once more on uvloop, the loop `mesh up`'s proxy process runs on.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.embedded_toxiproxy.server import ToxiproxyServer
from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    API_TOKEN,
    ApiServer,
    EchoServer,
    RealServer,
    RunningServer,
    listen_port,
)
from tests.support.peers import peer_binary


def _running(
    server: ToxiproxyServer,
    new_loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
) -> Iterator[RunningServer]:
    loop = new_loop()
    thread = threading.Thread(target=loop.run_forever, name="toxiproxy", daemon=True)
    thread.start()
    running = RunningServer(server, loop)
    running.call(running.server.start())
    try:
        yield running
    finally:
        running.call(running.server.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


@pytest.fixture
def toxiproxy(request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    """The embedded server, or real Toxiproxy where a test is parametrised with "real"; with
    "uvloop", the embedded server on the loop its process runs on
    (grpc_resilience_mesh.embedded_toxiproxy.server)."""
    param = getattr(request, "param", "embedded")
    if param == "real":
        with RealToxiproxy(binary=peer_binary("toxiproxy-server")) as real:
            yield RealServer(real.base_url)
        return
    if param == "uvloop":
        import uvloop

        yield from _running(ToxiproxyServer("127.0.0.1", 0), uvloop.new_event_loop)
        return
    yield from _running(ToxiproxyServer("127.0.0.1", 0))


@pytest.fixture
def toxiproxy_any_interface() -> Iterator[RunningServer]:
    """A server started with the explicit option that lets proxies listen beyond loopback."""
    yield from _running(ToxiproxyServer("127.0.0.1", 0, allow_non_loopback=True))


@pytest.fixture
def toxiproxy_with_token() -> Iterator[RunningServer]:
    """A server whose API requires API_TOKEN (grpc_resilience_mesh.embedded_toxiproxy.api_token)."""
    yield from _running(ToxiproxyServer("127.0.0.1", 0, token=API_TOKEN))


@pytest.fixture
def client(toxiproxy: ApiServer) -> ToxiproxyClient:
    return ToxiproxyClient(toxiproxy.base_url, timeout_s=5.0)


@pytest.fixture
def echo_server() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.serve_forever, name="echo", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def echo_port(echo_server: EchoServer) -> int:
    return int(echo_server.server_address[1])


@pytest.fixture
def echo_proxy(client: ToxiproxyClient, echo_port: int) -> int:
    """A proxy named "echo" in front of the echo server; returns the proxy's port."""
    return listen_port(client.create_proxy("echo", "127.0.0.1:0", f"127.0.0.1:{echo_port}"))
