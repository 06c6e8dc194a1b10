"""The gateway's public port, owned by a relay on the service's own loop: it bounds what grpc
core cannot (connections per client address, header bytes before the SETTINGS ACK) and hands
every connection to the grpc.aio server on a unix socket in a 0700 folder.

grpc core has no cap per peer and no way to refuse header bytes before a client ACKs its
SETTINGS, and grpcio cannot adopt an accepted socket, so the relay sits in front:
- connections: at most `max_connections` in all and `max_per_peer` from one source address. A
  connection past either cap is let in and the connection of that pool that has sent nothing for
  longest is closed instead, so a flood of idle handshaken connections churns itself out while a
  client that is calling keeps its place (refusing the newcomer would lock everyone out, and on
  loopback an attacker can use any 127.x.y.z, so per-address caps alone bound nothing);
- before its SETTINGS ACK a connection may send `preack_header_bytes` of HEADERS and
  CONTINUATION (grpc_resilience_mesh.services.runtime.preack); past that it is closed before grpc
  core sees the frame;
- after the ACK each chunk is copied as it comes (Protocol.data_received -> transport.write),
  with each side's write buffer pausing the other side's reads.
grpc core still applies its own limits to each relayed connection (handshake and SETTINGS ACK
timeouts, message and metadata sizes); when it closes one, the client's goes too.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.runtime.preack import PREACK_HEADER_BYTES, PreAckBudget, Verdict
from grpc_resilience_mesh.services.runtime.tls import MeshTls

log = logging.getLogger("grpc_resilience_mesh.services.runtime")
Pool = OrderedDict["ClientSide", None]
"""Connections in the order they last sent something, the longest silent first."""


@dataclass(frozen=True)
class FrontLimits:
    """What the public port holds: in all, per source address, and before the SETTINGS ACK."""

    max_connections: int = 4096
    max_per_peer: int = 512
    preack_header_bytes: int = PREACK_HEADER_BYTES
    log_every_s: float = 10.0


class ClientSide(asyncio.Protocol):
    """One client connection, relayed to its own connection to the grpc server."""

    __slots__ = (
        "budget", "early", "front", "peer", "pool", "server_spoke", "transport", "upstream",
    )  # fmt: skip

    def __init__(self, front: Front) -> None:
        self.front = front
        self.transport: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.budget: PreAckBudget | None = PreAckBudget(front.limits.preack_header_bytes)
        self.server_spoke = False
        self.peer = ""
        self.pool: Pool | None = None
        self.early: list[bytes] = []
        """What came before the grpc side connected (held, then written in order)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else ""
        # Until the grpc side is connected. Python before 3.11.7 starts reading after
        # connection_made regardless (its _add_reader ignores a pause made here), so data can
        # still arrive before then: data_received holds it (within the pre-ACK budget).
        transport.pause_reading()
        self.front.admit(self)
        self.front.connect_upstream(self)

    def data_received(self, data: bytes) -> None:
        front = self.front
        front.conns.move_to_end(self)
        if self.pool is not None:
            self.pool.move_to_end(self)
        if self.budget is not None:
            verdict = self.budget.feed(data, self.server_spoke)
            if verdict is Verdict.OVER:
                front.over_budget(self)
                return
            if verdict is Verdict.ACKED:
                self.budget = None
        upstream = self.upstream
        if upstream is None:
            self.early.append(data)
            if self.transport is not None:
                self.transport.pause_reading()  # honoured now that reading has started
            return
        upstream.write(data)

    def eof_received(self) -> bool:
        if self.upstream is not None and self.upstream.can_write_eof():
            self.upstream.write_eof()
            return True
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.front.forget(self)
        if self.upstream is not None:
            self.upstream.close()

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.resume_reading()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        if self.upstream is not None:
            self.upstream.abort()


class GrpcSide(asyncio.Protocol):
    """The relay's connection to the grpc server, for one client connection."""

    __slots__ = ("client",)

    def __init__(self, client: ClientSide) -> None:
        self.client = client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        client = self.client
        client.upstream = transport
        if client.transport is None or client.transport.is_closing():
            transport.abort()
            return
        if client.early:
            transport.write(b"".join(client.early))
            client.early.clear()
        client.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        client = self.client
        client.server_spoke = True
        assert client.transport is not None
        client.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client.transport is not None:
            self.client.transport.close()  # after what is buffered for the client (a GOAWAY)

    def pause_writing(self) -> None:
        if self.client.transport is not None:
            self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.client.transport is not None:
            self.client.transport.resume_reading()


class Front:
    """The listener on the public address and every connection it relays."""

    def __init__(self, limits: FrontLimits) -> None:
        self.limits = limits
        self.folder = Path(tempfile.mkdtemp(prefix="mesh-front-"))  # 0700: ours alone
        self.socket_path = str(self.folder / "grpc.sock")
        self.conns: Pool = OrderedDict()
        self.peers: dict[str, Pool] = {}
        self.closed_at_cap = 0
        self.closed_over_budget = 0
        self._server: asyncio.Server | None = None
        self._connecting: set[asyncio.Task[None]] = set()
        self._last_log = -limits.log_every_s

    @property
    def upstream_addr(self) -> str:
        """Where the grpc server must listen: `unix:` and the path."""
        return f"unix:{self.socket_path}"

    async def start(self, host: str, port: int) -> int:
        """Listen on host:port (port 0 picks one); the port bound."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ClientSide(self), host or None, port, backlog=1024
        )
        return int(self._server.sockets[0].getsockname()[1])

    def admit(self, conn: ClientSide) -> None:
        """Add `conn`; past a cap, close the longest silent connection of that pool."""
        pool = self.peers.get(conn.peer)
        if pool is None:
            pool = self.peers[conn.peer] = OrderedDict()
        conn.pool = pool
        pool[conn] = None
        self.conns[conn] = None
        if len(pool) > self.limits.max_per_peer:
            self._close_at_cap(next(iter(pool)), f"per peer {self.limits.max_per_peer}")
        if len(self.conns) > self.limits.max_connections:
            self._close_at_cap(next(iter(self.conns)), f"in all {self.limits.max_connections}")

    def connect_upstream(self, conn: ClientSide) -> None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._connect(conn))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)

    async def _connect(self, conn: ClientSide) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.create_unix_connection(lambda: GrpcSide(conn), self.socket_path)
        except OSError:
            conn.abort()

    def forget(self, conn: ClientSide) -> None:
        self.conns.pop(conn, None)
        pool = conn.pool
        if pool is not None:
            pool.pop(conn, None)
            if not pool:
                self.peers.pop(conn.peer, None)
            conn.pool = None

    def over_budget(self, conn: ClientSide) -> None:
        self.closed_over_budget += 1
        self.forget(conn)
        conn.abort()
        self._log("header bytes before the SETTINGS ACK past the limit: connection closed")

    def _close_at_cap(self, conn: ClientSide, cap: str) -> None:
        self.closed_at_cap += 1
        self.forget(conn)
        conn.abort()
        self._log(f"connections at the cap ({cap}): the longest silent closed")

    def _log(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_log >= self.limits.log_every_s:
            self._last_log = now
            log.warning(
                message,
                extra={
                    "connections": len(self.conns),
                    "closed_at_cap": self.closed_at_cap,
                    "closed_over_budget": self.closed_over_budget,
                },
            )

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    async def close(self) -> None:
        """Stop accepting, close what is left, remove the socket's folder."""
        self.stop_accepting()
        for conn in list(self.conns):
            conn.abort()
        for task in list(self._connecting):
            task.cancel()
        await asyncio.gather(*self._connecting, return_exceptions=True)
        shutil.rmtree(self.folder, ignore_errors=True)


RELAY_DESCRIPTORS = 3
"""Descriptors a relayed connection holds in the process: the client's, the relay's, grpc's."""


def front_for(config: ServiceConfig, tls: MeshTls | None, max_connections: int) -> Front | None:
    """The relay for `config`'s public port, or None: not asked for, or the port speaks TLS
    (the relay reads HTTP/2 frames, which TLS hides)."""
    if not config.public_front or (tls is not None and tls.serves_tls(config.name)):
        return None
    return Front(FrontLimits(max_connections, config.max_connections_per_peer))


async def listen(front: Front, var: str, addr: str) -> int:
    """`front` listening on `addr`, the port bound; an address that cannot be bound is a
    ConfigError naming `var`."""
    host, _, port = addr.rpartition(":")
    try:
        return await front.start(host.strip("[]"), int(port))
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise ConfigError(f"{var}={addr!r} cannot be bound: {reason}") from None
