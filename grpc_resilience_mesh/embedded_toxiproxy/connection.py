"""A proxied TCP connection: the client socket, the upstream socket and the two links between."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Protocol, cast

from grpc_resilience_mesh.embedded_toxiproxy.addresses import split_host_port
from grpc_resilience_mesh.embedded_toxiproxy.errors import ApiError
from grpc_resilience_mesh.embedded_toxiproxy.link import Link
from grpc_resilience_mesh.embedded_toxiproxy.toxic_collection import ToxicCollection
from grpc_resilience_mesh.embedded_toxiproxy.toxics import Direction


class Proxy(Protocol):
    """What a connection needs of the proxy it came through
    (grpc_resilience_mesh.embedded_toxiproxy.proxy.Proxy)."""

    name: str
    upstream: str
    toxics: ToxicCollection

    def track(self, conn: Connection) -> None: ...
    def untrack(self, conn: Connection) -> None: ...


log = logging.getLogger(__name__)

_LINGER_RESET = struct.pack("ii", 1, 0)


class Side(asyncio.Protocol):
    """One socket of a connection, with the flow control that couples it to its peer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.conn: Connection | None = None
        self.closed = False
        self._write_paused = False
        self._writable_waiters: list[asyncio.Future[None]] = []
        self._read_pauses: set[str] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # asyncio already sets TCP_NODELAY; say so explicitly since gRPC depends on it.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        conn = self.conn
        if conn is not None and not conn.closed:
            link = conn.outgoing(self)
            if link is not None:
                link.feed(data)
            else:
                conn.hold(self, data)

    def eof_received(self) -> bool:
        conn = self.conn
        if conn is not None and not conn.closed:
            link = conn.outgoing(self)
            if link is not None:
                link.feed_eof()
            else:
                conn.hold(self, None)
        # Keep the socket half-open: the other direction may still be carrying data.
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake_writers()
        if self.conn is not None:
            self.conn.side_lost(self)

    def pause_writing(self) -> None:
        self._write_paused = True
        if self.conn is not None:
            self.conn.peer(self).pause_reading_for("peer-buffer")

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_writers()
        if self.conn is not None:
            self.conn.peer(self).resume_reading_for("peer-buffer")

    def _wake_writers(self) -> None:
        for waiter in self._writable_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._writable_waiters.clear()

    async def writable(self) -> None:
        """Wait while the kernel and transport buffers are full (the peer is not reading)."""
        if not self._write_paused or self.closed:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._writable_waiters.append(waiter)
        await waiter

    def pause_reading_for(self, reason: str) -> None:
        if not self._read_pauses and self.transport is not None and not self.closed:
            self.transport.pause_reading()
        self._read_pauses.add(reason)

    def resume_reading_for(self, reason: str) -> None:
        if reason not in self._read_pauses:
            return
        self._read_pauses.discard(reason)
        if not self._read_pauses and self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(data)

    def write_eof(self) -> None:
        if self.transport is not None and not self.closed and self.transport.can_write_eof():
            self.transport.write_eof()

    def close(self, reset: bool = False) -> None:
        if self.transport is None or self.closed:
            return
        if reset:
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                # SO_LINGER 0 makes close() send an RST instead of a FIN.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            self.transport.abort()
        else:
            self.transport.close()


class ClientSide(Side):
    """The accepted socket: it creates the connection and dials the upstream."""

    def __init__(self, proxy: Proxy) -> None:
        super().__init__()
        self._proxy = proxy

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # Nothing may be read until the upstream is connected and the links exist.
        self.pause_reading_for("dialing")
        self.conn = Connection(self._proxy, self)
        self._proxy.track(self.conn)


class Connection:
    """Client <-> proxy <-> upstream, closed as a whole when either side ends for good."""

    def __init__(self, proxy: Proxy, client: ClientSide) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = Side()
        self.upstream.conn = self
        self.closed = False
        self._links: dict[Side, Link] = {}
        self._held: list[tuple[Side, bytes | None]] = []
        """What a side delivered before the links existed (None: its EOF), in order. The
        client is paused until then, but an event loop may hand over what it had already
        read (uvloop can), and the upstream may speak first (an HTTP/2 server's SETTINGS)."""
        self._opening = asyncio.get_running_loop().create_task(self._open())

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            host, port = split_host_port(self.proxy.upstream)
            await loop.create_connection(lambda: self.upstream, host, port)
        except (OSError, ApiError) as exc:
            log.warning("proxy %s: upstream %s: %s", self.proxy.name, self.proxy.upstream, exc)
            self.close()
            return
        if self.closed:
            self.upstream.close()
            return
        toxics = self.proxy.toxics
        up = Link(self, Direction.UPSTREAM, self.client, self.upstream, toxics)
        down = Link(self, Direction.DOWNSTREAM, self.upstream, self.client, toxics)
        self._links = {self.client: up, self.upstream: down}
        toxics.attach(up)
        toxics.attach(down)
        held, self._held = self._held, []
        for side, data in held:
            if self.closed:
                return
            if data is None:
                self._links[side].feed_eof()
            else:
                self._links[side].feed(data)
        self.client.resume_reading_for("dialing")

    def outgoing(self, side: Side) -> Link | None:
        """The link `side`'s bytes go out on; None until both sockets are connected."""
        return self._links.get(side)

    def hold(self, side: Side, data: bytes | None) -> None:
        """Keeps bytes (None: an EOF) that arrived before the links existed, for _open."""
        self._held.append((side, data))

    def peer(self, side: Side) -> Side:
        return self.upstream if side is self.client else self.client

    def link_finished(self) -> None:
        if all(link.finished for link in self._links.values()):
            self.close()

    def side_lost(self, side: Side) -> None:
        if self.closed or not self._links:
            self.close()
            return
        # A socket that died cannot receive anything more; what it sent still gets delivered.
        self._links[self.peer(side)].finished = True
        link = self._links[side]
        if not link.finished:
            link.feed_eof()
        self.link_finished()

    def _teardown(self) -> bool:
        if self.closed:
            return False
        self.closed = True
        self._opening.cancel()
        for link in self._links.values():
            self.proxy.toxics.detach(link)
            link.shutdown()
        self.proxy.untrack(self)
        return True

    def close(self) -> None:
        """Graceful close: buffered bytes are flushed, then FIN."""
        if self._teardown():
            self.client.close()
            self.upstream.close()

    def abort(self) -> None:
        """Immediate close, dropping what is buffered (proxy disabled or removed)."""
        if self._teardown():
            for side in (self.client, self.upstream):
                if side.transport is not None and not side.closed:
                    side.transport.abort()

    def reset(self) -> None:
        """Close both sockets with TCP RST (reset_peer)."""
        if self._teardown():
            self.client.close(reset=True)
            self.upstream.close(reset=True)
