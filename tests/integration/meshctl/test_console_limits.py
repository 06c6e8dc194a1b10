"""The console holds its ground against idle and slow clients: a connection that sends nothing,
or its headers too slowly, is closed within seconds; a thousand idle ones cost no threads and
few descriptors; a page's requests are answered again once they are gone."""

from __future__ import annotations

import http.client
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.bounded_http import HttpLimits
from grpc_resilience_mesh.console.server import ConsoleServer
from tests.support.polling import wait_until

IDLE_S = HttpLimits().idle_timeout_s


def mesh_state(tmp_path: Path) -> MeshState:
    return MeshState(
        gateway="127.0.0.1:1",
        toxiproxy=None,
        services={},
        proxies={},
        pids={},
        policy="full",
        state_dir=str(tmp_path),
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ConsoleServer]:
    running = ConsoleServer(mesh_state(tmp_path), 0, reports_dir=tmp_path / "reports").start()
    try:
        yield running
    finally:
        running.close()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=IDLE_S + 5)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return sock


def closed_after(sock: socket.socket) -> float:
    """Seconds until the server closes `sock` (reads until EOF; raises on the socket timeout)."""
    started = time.monotonic()
    while sock.recv(4096):
        pass
    return time.monotonic() - started


def page_answers(server: ConsoleServer) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        auth = {"Authorization": f"Bearer {server.token.value}"}
        conn.request("GET", "/api/reports", headers=auth)
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_connection_that_sends_nothing_is_closed_within_seconds(server: ConsoleServer) -> None:
    with connect(server.port) as idle:
        assert closed_after(idle) < IDLE_S + 3


def test_the_first_request_timeout_holds_without_aiohttps_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp before 3.14.5 did not time out a connection's first request; ours does."""
    from aiohttp import web_protocol

    monkeypatch.setattr(web_protocol.RequestHandler, "_process_keepalive", lambda self: None)
    server = ConsoleServer(mesh_state(tmp_path), 0, reports_dir=tmp_path / "reports").start()
    try:
        assert page_answers(server)  # a request in time is answered
        with connect(server.port) as idle:
            assert closed_after(idle) < IDLE_S + 3
    finally:
        server.close()


def test_headers_sent_too_slowly_are_cut_off(server: ConsoleServer) -> None:
    with connect(server.port) as slow:
        slow.sendall(f"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode())
        started = time.monotonic()
        try:
            while time.monotonic() - started < IDLE_S + 5:  # one header byte every 0.2 s
                slow.sendall(b"X")
                time.sleep(0.2)
        except OSError:  # the server closed it
            pass
        elapsed = time.monotonic() - started
        assert elapsed < IDLE_S + 3, f"a slowloris header was still open after {elapsed:.1f} s"


def test_a_thousand_idle_connections_cost_no_threads_and_the_page_comes_back(
    server: ConsoleServer,
) -> None:
    threads_before, fds_before = threading.active_count(), open_fds()
    held = [socket.socket() for _ in range(1000)]
    for sock in held:  # started at once, as from many clients; the kernel completes them
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", server.port))
    try:
        time.sleep(0.5)  # the server has accepted what it will
        threads_during = threading.active_count()
        server_fds = open_fds() - fds_before - len(held)  # ours are the 1,000 client ends
        assert threads_during - threads_before <= HttpLimits().workers, threads_during
        assert server_fds <= HttpLimits().max_connections + 8, server_fds
        # While they are held the idle ones are closed, and a page is answered again.
        wait_until(lambda: page_answers(server), IDLE_S + 5, "the console answering again")
    finally:
        for sock in held:
            sock.close()


def test_a_body_that_never_comes_is_answered_408_and_closed(server: ConsoleServer) -> None:
    with connect(server.port) as slow:
        slow.sendall(
            f"POST /api/load/stop HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Authorization: Bearer {server.token.value}\r\n"
            "X-Mesh-Console: 1\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        started, reply = time.monotonic(), b""
        while chunk := slow.recv(4096):
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 408"), reply[:40]
        assert time.monotonic() - started < HttpLimits().body_timeout_s + 3


def test_at_the_cap_a_page_gets_in_and_the_longest_silent_connection_goes(
    server: ConsoleServer,
) -> None:
    """Round 4, item 10: at the cap the newcomer got 503, so one process re-opening silent
    connections locked the page out (21 of 30 answered with 80 held, measured); now the
    connection that has waited longest for a request head makes room."""
    held = [connect(server.port) for _ in range(HttpLimits().max_connections)]
    try:
        started = time.monotonic()
        assert page_answers(server)
        assert time.monotonic() - started < IDLE_S  # not once the silent ones timed out
        assert closed_after(held[0]) < 2, "the longest silent connection was kept"
        held[-1].settimeout(0.2)
        with pytest.raises(TimeoutError):  # a newer silent one stays until its own timeout
            held[-1].recv(1)
    finally:
        for sock in held:
            sock.close()
