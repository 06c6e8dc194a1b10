"""A proxy: a listening socket, its upstream address, its toxics and its live connections."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from grpc_resilience_mesh.embedded_toxiproxy.addresses import (
    bind_address,
    join_host_port,
    require_loopback,
    resolve_listen,
)
from grpc_resilience_mesh.embedded_toxiproxy.connection import ClientSide, Connection
from grpc_resilience_mesh.embedded_toxiproxy.errors import internal
from grpc_resilience_mesh.embedded_toxiproxy.toxic_collection import ToxicCollection


class ProxyAlreadyStartedError(Exception):
    """Raised by start() on a running proxy; /reset ignores it, as Toxiproxy does."""


async def _bind(listen: str) -> socket.socket:
    try:
        family, host, port = await bind_address(listen)
        if host == "":
            # Go's wildcard listener accepts IPv4 and IPv6 on one port and reports "[::]:port".
            if socket.has_dualstack_ipv6():
                return socket.create_server(
                    ("::", port), family=socket.AF_INET6, dualstack_ipv6=True
                )
            return socket.create_server(("0.0.0.0", port))
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise internal(f"listen tcp {listen}: bind: {reason}") from None


class Proxy:
    """Toxiproxy's Proxy: `listen` holds the real bound address once started.

    Unless `allow_non_loopback`, it refuses to bind anything but a loopback address.
    """

    def __init__(
        self, name: str, listen: str, upstream: str, allow_non_loopback: bool = False
    ) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.allow_non_loopback = allow_non_loopback
        self.enabled = False
        self.toxics = ToxicCollection()
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            # Toxiproxy 2.12 marshals its exported zerolog field too: clients see `"Logger":{}`.
            "Logger": {},
            "toxics": [toxic.to_json() for toxic in self.toxics.all()],
        }

    def track(self, conn: Connection) -> None:
        self._connections.add(conn)

    def untrack(self, conn: Connection) -> None:
        self._connections.discard(conn)

    async def start(self) -> None:
        if self.enabled:
            raise ProxyAlreadyStartedError(self.name)
        if not self.allow_non_loopback:
            await require_loopback(self.listen)
        sock = await _bind(self.listen)
        try:
            self._server = await asyncio.get_running_loop().create_server(
                lambda: ClientSide(self), sock=sock, backlog=1024
            )
        except OSError as exc:
            sock.close()
            raise internal(f"listen tcp {self.listen}: {exc}") from None
        host, port = sock.getsockname()[:2]
        # Port 0 becomes the real port, so disabling and enabling again reuses it.
        self.listen = join_host_port(host, port)
        self.enabled = True

    def stop(self) -> None:
        """Refuse new connections (listener closed) and drop the existing ones."""
        if not self.enabled:
            return
        self.enabled = False
        if self._server is not None:
            self._server.close()
            self._server = None
        for conn in list(self._connections):
            conn.abort()

    async def differs(self, listen: str, upstream: str) -> bool:
        return self.listen != await resolve_listen(listen) or self.upstream != upstream

    async def update(self, listen: str, upstream: str, enabled: bool) -> None:
        """Toxiproxy's Proxy.Update: a new address restarts the proxy, dropping connections."""
        if await self.differs(listen, upstream):
            self.stop()
            self.listen = listen
            self.upstream = upstream
        if enabled != self.enabled:
            if enabled:
                await self.start()
            else:
                self.stop()
