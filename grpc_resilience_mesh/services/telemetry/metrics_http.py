"""/metrics over HTTP on the service's own event loop: no thread per connection, and bounded.

prometheus_client's `start_http_server` spends a thread per connection and never times one out
(500 idle connections to the gateway's metrics port made 512 threads). This is the small part of
it a scraper uses, on asyncio streams: `GET /metrics` (or `/`), the exposition format the Accept
header asks for (prometheus_client's `choose_encoder`), gzip when accepted, `name[]` filters, one
answer per connection. A connection must send its request head within `header_timeout_s` of
connecting and take the answer within `write_timeout_s`; at most `max_connections` are open. At
the cap a new connection is let in and the one that has waited longest without a complete
request head is closed instead: refusing the newcomer let one process that re-opens silent
connections lock every scraper out. Only when every open connection has sent its head (it is
being answered) is the newcomer closed. Either is logged at most every `refusal_log_every_s`.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import socket
import time
import urllib.parse
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = logging.getLogger("mesh.metrics")
METRIC_PATHS = ("/metrics", "/")


@dataclass(frozen=True)
class MetricsHttpLimits:
    """What the metrics endpoint lets one connection, and all of them, hold."""

    max_connections: int = 32  # open at once; past it the longest silent one is closed (a
    # scraper uses one), or the newcomer when every one has sent its request head
    header_timeout_s: float = 5.0  # from connecting to the end of the request head
    write_timeout_s: float = 10.0  # to hand over the answer to a client that reads slowly
    accept_backlog: int = 16  # accepted per turn of the loop (what a flood briefly adds)
    max_head_bytes: int = 16 * 1024  # request line and headers together
    refusal_log_every_s: float = 10.0


def _answer(status: str, body: bytes, headers: dict[str, str], head_only: bool) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (b"" if head_only else body)


def _headers(head: bytes) -> tuple[str, str, dict[str, str]]:
    """(method, target, lower-cased headers) of a request head; ValueError when malformed."""
    request_line, *rest = head.decode("latin-1").split("\r\n")
    method, target, version = request_line.split(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(version)
    fields = dict(line.split(":", 1) for line in rest if line)
    return method, target, {k.strip().lower(): v.strip() for k, v in fields.items()}


class MetricsHttpServer:
    """Serves `registry` on a bound socket from tasks of the running loop."""

    def __init__(self, registry: CollectorRegistry, limits: MetricsHttpLimits) -> None:
        self.registry = registry
        self.limits = limits
        self.refused = 0
        self.closed_silent = 0
        """Connections closed at the cap to make room, having sent no complete request head."""
        self._last_warning = 0.0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._silent: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        """Open connections without a complete request head yet, oldest first."""

    @property
    def open_connections(self) -> int:
        return len(self._tasks)

    async def start(self, sock: socket.socket) -> None:
        self._server = await asyncio.start_server(
            self._connection,
            sock=sock,
            limit=self.limits.max_head_bytes,
            backlog=self.limits.accept_backlog,
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.open_connections >= self.limits.max_connections and not self._close_silent():
            self.refused += 1
            self._warn("metrics endpoint refused a connection: every open one is being answered")
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._silent[task] = writer
        try:
            async with asyncio.timeout(self.limits.header_timeout_s):
                head = await reader.readuntil(b"\r\n\r\n")
            self._silent.pop(task, None)  # (or closed to make room meanwhile)
            reply = self._reply(head)
            async with asyncio.timeout(self.limits.write_timeout_s):
                writer.write(reply)
                await writer.drain()
            writer.close()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.transport.abort()
        finally:
            self._silent.pop(task, None)
            self._tasks.discard(task)

    def _reply(self, head: bytes) -> bytes:
        try:
            method, target, headers = _headers(head[:-4])
        except ValueError:
            return _answer("400 Bad Request", b"bad request\n", {}, head_only=False)
        if method not in ("GET", "HEAD"):
            return _answer("405 Method Not Allowed", b"", {"Allow": "GET, HEAD"}, False)
        url = urllib.parse.urlsplit(target)
        if url.path not in METRIC_PATHS:
            return _answer("404 Not Found", b"see /metrics\n", {}, method == "HEAD")
        registry = self.registry
        names = urllib.parse.parse_qs(url.query).get("name[]")
        if names:
            registry = registry.restricted_registry(names)  # type: ignore[assignment]
        encoder, content_type = choose_encoder(headers.get("accept", ""))
        body = encoder(registry)
        extra = {"Content-Type": content_type}
        if "gzip" in headers.get("accept-encoding", ""):
            body, extra["Content-Encoding"] = gzip.compress(body, compresslevel=1), "gzip"
        return _answer("200 OK", body, extra, method == "HEAD")

    def _close_silent(self) -> bool:
        """Closes the connection that has waited longest without a complete request head, and
        gives its place up now (its task ends soon); False when there is none."""
        for task, writer in self._silent.items():
            del self._silent[task]
            self._tasks.discard(task)
            writer.transport.abort()
            self.closed_silent += 1
            self._warn("metrics endpoint at its cap: closed the connection silent for longest")
            return True
        return False

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_warning >= self.limits.refusal_log_every_s:
            self._last_warning = now
            log.warning(
                message,
                extra={
                    "open": self.open_connections,
                    "refused": self.refused,
                    "closed_silent": self.closed_silent,
                },
            )


def listen(addr: str) -> socket.socket:
    """A listening socket on "host:port" (port 0 picks one; no host: every address)."""
    host, _, port = addr.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, int(port)), family=family)
