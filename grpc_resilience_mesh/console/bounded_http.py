"""An aiohttp application served from one thread of its own, with bounds a thread-per-connection
server lacks: a cap on open connections, and idle or slow-header connections closed.

After each answer aiohttp arms its `keepalive_timeout` and closes the connection if no complete
request head has arrived by then: the idle and header timeout between requests. Before the
first request only recent releases (3.14.5, aio-libs/aiohttp#13681) arm it, so
`_CountedProtocol` arms a first-request timer of its own (`idle_timeout_s`), cancelled by
the first request that reaches the application. aiohttp has no connection cap:
`_CountedProtocol` counts the connections the listener made, and at `max_connections` a new
connection is let in and the one that has waited longest without a complete request head (since
it connected, or since its last answer) is closed instead: refusing the newcomer let one process
that re-opens silent connections lock the page out. Only when every open connection has a
request in progress is the newcomer answered 503 and closed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

log = logging.getLogger("grpc_resilience_mesh.console")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
REFUSAL = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@dataclass(frozen=True)
class HttpLimits:
    """What one connection, and all of them, may hold."""

    max_connections: int = 64  # open at once (a page uses ~6); past it the longest silent one
    # is closed, or the newcomer answered 503 when every one has a request in progress
    idle_timeout_s: float = 5.0  # no complete request head this long after connecting or after
    # the last answer: closed (a page polls every second, so its connection stays)
    body_timeout_s: float = 5.0  # a request body must arrive within this (a slow one: 408)
    max_line_size: int = 8190  # request line and each header line, bytes (aiohttp's default)
    max_field_size: int = 8190  # one header's value, bytes (aiohttp's default)
    accept_backlog: int = 16  # connections accepted per turn of the loop, and the listen queue:
    # what a flood adds (briefly, each answered 503) beyond max_connections
    workers: int = 4  # threads that run requests' blocking work (scrapes, admin calls)
    refusal_log_every_s: float = 10.0  # at most one warning about refused connections this often


class _CountedProtocol(asyncio.Protocol):
    """aiohttp's protocol for one connection, counted while it is open."""

    def __init__(self, inner: Any, owner: BoundedHttpServer) -> None:
        self._inner = inner
        self._owner = owner
        self.first_request_timer: asyncio.TimerHandle | None = None
        self.transport: asyncio.Transport | None = None
        self.counted = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._inner.connection_made(transport)
        self.first_request_timer = asyncio.get_running_loop().call_later(
            self._owner.limits.idle_timeout_s, transport.close
        )
        self._owner.waiting_for_request[self._inner] = self

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self._inner.eof_received()
        return result

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.release()
        self.request_started()
        self._inner.connection_lost(exc)

    def release(self) -> None:
        """Gives up its place in the count (once: when it is closed to make room, or lost)."""
        if self.counted:
            self.counted = False
            self._owner.open_connections -= 1

    def request_started(self) -> None:
        self._owner.waiting_for_request.pop(self._inner, None)
        if self.first_request_timer is not None:
            self.first_request_timer.cancel()
            self.first_request_timer = None

    def request_done(self) -> None:
        """Waiting for its next request head from now on (the newest such)."""
        if self.counted and self.transport is not None and not self.transport.is_closing():
            self._owner.waiting_for_request[self._inner] = self


class _Refused(asyncio.Protocol):
    """A connection over the cap: one 503, then closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(REFUSAL)
        transport.close()


class BoundedHttpServer:
    """Serves `app` on the bound, listening `sock` from a daemon thread running its own loop."""

    def __init__(self, app: web.Application, sock: socket.socket, limits: HttpLimits) -> None:
        self.limits = limits
        self.open_connections = 0
        self.refused = 0
        self.closed_silent = 0
        """Connections closed at the cap to make room, having no request in progress."""
        self.waiting_for_request: dict[Any, _CountedProtocol] = {}
        """Open connections with no request in progress, the longest waiting first."""
        app.middlewares.insert(0, self._track_requests)
        self._app = app
        self._sock = sock
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._last_warning = 0.0
        self._thread = threading.Thread(target=self._run, name="console-http", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)
        self._sock.close()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # start() raises it in the caller's thread
            self._error = err
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner = web.AppRunner(
            self._app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=0.5,
            keepalive_timeout=self.limits.idle_timeout_s,
            lingering_time=1.0,  # reading an unread body after an early answer (was 10 s)
            max_line_size=self.limits.max_line_size,
            max_field_size=self.limits.max_field_size,
        )
        await runner.setup()
        assert runner.server is not None
        make = runner.server
        listener = await self._loop.create_server(
            lambda: self._protocol(make), sock=self._sock, backlog=self.limits.accept_backlog
        )
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            listener.close()
            await runner.cleanup()

    @web.middleware
    async def _track_requests(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        connection = self.waiting_for_request.get(request.protocol)
        if connection is not None:
            connection.request_started()
        try:
            return await handler(request)
        finally:
            if connection is not None:
                connection.request_done()

    def _protocol(self, make: web.Server) -> asyncio.Protocol:
        if self.open_connections >= self.limits.max_connections and not self._close_silent():
            self.refused += 1
            self._warn("console refused a connection: every open one has a request in progress")
            return _Refused()
        self.open_connections += 1
        return _CountedProtocol(make(), self)

    def _close_silent(self) -> bool:
        """Closes the connection that has waited longest for a request head, giving its place
        up at once; False when every open connection has a request in progress."""
        for inner, connection in self.waiting_for_request.items():
            del self.waiting_for_request[inner]
            connection.release()
            if connection.transport is not None:
                connection.transport.abort()
            self.closed_silent += 1
            self._warn("console at its connection cap: closed the connection silent for longest")
            return True
        return False

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_warning >= self.limits.refusal_log_every_s:
            self._last_warning = now
            log.warning(
                "%s (cap %d); %d refused, %d closed so far",
                message,
                self.limits.max_connections,
                self.refused,
                self.closed_silent,
            )
