"""Socket helpers shared by the Toxiproxy conformance tests."""

from __future__ import annotations

import asyncio
import json
import socket
import socketserver
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Protocol, cast

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.server import ToxiproxyServer

# Runs every test of a module against the embedded server (on asyncio's loop and on uvloop,
# which its process uses) and against real Toxiproxy.
BOTH_SERVERS = pytest.mark.parametrize("toxiproxy", ["embedded", "uvloop", "real"], indirect=True)


def listen_port(proxy: dict[str, Any]) -> int:
    return int(str(proxy["listen"]).rsplit(":", 1)[1])


def connect(port: int, timeout_s: float = 3.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def round_trip_ms(sock: socket.socket, payload: bytes = b"ping") -> float:
    """Send a small message and wait for the whole echo; milliseconds."""
    start = time.perf_counter()
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload):
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed during round trip")
        received += data
    assert received == payload
    return (time.perf_counter() - start) * 1000


class ApiServer(Protocol):
    """What a test needs of either server: where its HTTP API answers, and which one it is."""

    @property
    def base_url(self) -> str: ...

    @property
    def real(self) -> bool: ...


API_TOKEN = "toxiproxy-token-for-this-test-0123"
"""The token of the `toxiproxy_with_token` fixture's server."""


@dataclass
class RealServer:
    base_url: str
    real: bool = True


@dataclass
class RunningServer:
    server: ToxiproxyServer
    loop: asyncio.AbstractEventLoop
    real: bool = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.api_port}"

    def call(self, coro: Any, timeout_s: float = 5.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)


def http(
    server: ApiServer,
    method: str,
    path: str,
    body: Any = None,
    raw: bytes | None = None,
    user_agent: str = "test",
) -> tuple[int, dict[str, str], bytes]:
    """One request on the raw HTTP API: status, headers, body (errors included)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(server.base_url + path, data=data, method=method)
    request.add_header("User-Agent", user_agent)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def error_of(status: int, body: bytes) -> dict[str, Any]:
    """Toxiproxy's error shape, `{"error": ..., "status": N}`, checked against the HTTP status."""
    parsed = json.loads(body)
    assert parsed["status"] == status
    return dict(parsed)


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while data := sock.recv(65536):
                sock.sendall(data)
                cast(EchoServer, self.server).count_echoed(len(data))
        except OSError:
            pass


class EchoServer(socketserver.ThreadingTCPServer):
    """Echoes every connection; `echoed_bytes` counts what it has sent back, for polling."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.echoed_bytes = 0
        self._lock = threading.Lock()

    def count_echoed(self, size: int) -> None:
        with self._lock:
            self.echoed_bytes += size
