"""How many connections a service holds: its descriptor limit, grpc core's caps, and a watch
that says when a port is full (grpc core closes the connections past its cap without a word).

- `raise_descriptor_limit()`: the soft RLIMIT_NOFILE up to the hard one (often 1,024 of
  1,048,576 or more): at 1,024, about a thousand idle TCP connections were enough to leave no
  descriptor for a new client, whose calls then timed out.
- `connection_options()`: `grpc.max_allowed_incoming_connections` (core accepts, then closes at
  once, any connection past it) and `grpc.server_handshake_timeout_ms` (a connection that has
  not sent its HTTP/2 preface and SETTINGS in time is closed: "Did not receive HTTP/2 settings
  before handshake timeout"). grpc core has no cap per peer; the handshake timeout is what bounds
  how long a silent connection, from anyone, holds a place. `grpc.http2.settings_timeout`
  (grpc's default: 60 s) disconnects a peer that does not ACK the server's SETTINGS in time:
  until that ACK grpc core enforces the HTTP/2 default header-list limit (16 MiB), not ours
  (16 KiB): docs/upstream/grpc-preauth-metadata.md. On the gateway a relay owns the public port
  and bounds both per source address and in bytes (grpc_resilience_mesh.services.runtime.front).
- `idle_options()`: `grpc.max_connection_idle_ms`, the one limit that closes a connection that
  finished its handshake and then carries no call (the gateway's public port only).
- `ConnectionWatch`: the port's established connections (Linux /proc/net/tcp and tcp6); at
  the cap it logs one WARNING, and one INFO when there is room again. `ConnectionWatches` runs
  a process's watches every `interval_s`, reading the tables once for all, and only when the
  process holds as many descriptors as a cap (the tables cost ~5.7 ms of CPU a reading).
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DESCRIPTOR_RESERVE = 256
"""Descriptors kept back from the connection cap: log files, channels, the metrics port."""
TCP_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
ESTABLISHED = "01"

log = logging.getLogger("grpc_resilience_mesh.services.runtime")


def raise_descriptor_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError):
            return soft, soft
        return soft, hard
    return soft, soft


def connection_cap(wanted: int, descriptor_limit: int, per_connection: int = 1) -> int:
    """`wanted`, or fewer when the descriptor limit leaves no room for that many connections
    of `per_connection` descriptors each (3 through the relay: the client's socket, the
    relay's to grpc and grpc's own)."""
    if descriptor_limit == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, (descriptor_limit - DESCRIPTOR_RESERVE) // per_connection))


@dataclass(frozen=True)
class ConnectionCaps:
    """Each port's connection cap, as the descriptor limit allows."""

    public: int
    admin: int

    @classmethod
    def at_start(cls, public: int, admin: int, per_public: int = 1) -> ConnectionCaps:
        """Raise the soft descriptor limit to the hard one (logged once), then fit the caps;
        each public connection holds `per_public` descriptors."""
        before, after = raise_descriptor_limit()
        if after != before:
            log.info("descriptor limit raised", extra={"from": before, "to": after})
        caps = cls(connection_cap(public, after, per_public), connection_cap(admin, after))
        if caps.public < public:
            log.warning(
                "connection cap lowered to fit the descriptor limit",
                extra={"cap": f"MAX_CONNECTIONS={caps.public}", "descriptors": after},
            )
        return caps


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def connection_options(
    max_connections: int, handshake_timeout_s: float, settings_ack_timeout_s: float
) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_allowed_incoming_connections", max_connections),
        ("grpc.server_handshake_timeout_ms", _ms(handshake_timeout_s)),
        ("grpc.http2.settings_timeout", _ms(settings_ack_timeout_s)),
    ]


def idle_options(idle_timeout_s: float | None) -> list[tuple[str, Any]]:
    """A connection that carries no call for `idle_timeout_s` is closed with a GOAWAY, however
    many frames it sends (None: never, grpc's default)."""
    if idle_timeout_s is None:
        return []
    return [("grpc.max_connection_idle_ms", _ms(idle_timeout_s))]


def established(port: int, tables: Iterable[Path] = TCP_TABLES) -> int | None:
    """Established TCP connections whose local port is `port`; None where /proc has no table."""
    counts = established_on((port,), tables)
    return None if counts is None else counts[port]


def established_on(
    ports: Collection[int], tables: Iterable[Path] = TCP_TABLES
) -> dict[int, int] | None:
    """Established TCP connections of each of `ports` (by local port), every table read once
    for all of them; None where /proc has no table. A reading is not cheap: the kernel walks
    its whole established hash (262,144 buckets on a 24 GiB machine), ~5.7 ms of CPU a table
    however few connections it holds."""
    wanted = {f"{port:04X}": port for port in ports}
    counts, seen = dict.fromkeys(ports, 0), False
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for line in lines:
            fields = line.split(None, 4)
            if len(fields) > 3 and fields[3] == ESTABLISHED:
                port = wanted.get(fields[1].rpartition(":")[2])
                if port is not None:
                    counts[port] += 1
    return counts if seen else None


def open_descriptors(fd_dir: Path = Path("/proc/self/fd")) -> int | None:
    """Descriptors this process holds now; None where /proc does not say."""
    try:
        return len(os.listdir(fd_dir))
    except OSError:
        return None


@dataclass
class ConnectionWatch:
    """Logs when `port` holds `cap` connections (grpc core refuses the next ones silently)."""

    name: str
    """The variable that sets the cap, e.g. MAX_CONNECTIONS (the log line names it)."""
    port: int
    cap: int
    count: Callable[[int], int | None] = established
    full: bool = False

    def check(self) -> None:
        self.observe(self.count(self.port))

    def observe(self, held: int | None) -> None:
        """What one reading says: `held` connections on the port (None: no reading)."""
        if held is None:
            return
        if held >= self.cap and not self.full:
            self.full = True
            log.warning(
                "connections at the cap: new ones are refused",
                extra={"port": self.port, "connections": held, "cap": f"{self.name}={self.cap}"},
            )
        elif held < self.cap and self.full:
            self.full = False
            log.info(
                "connections below the cap again",
                extra={"port": self.port, "connections": held, "cap": f"{self.name}={self.cap}"},
            )


@dataclass
class ConnectionWatches:
    """A process's watches on one timer: every `interval_s` the TCP tables are read once for
    all their ports, and not at all while the process holds fewer descriptors than each
    watch's cap and none is at its cap. Each connection grpc core has accepted holds one of
    the process's descriptors, so with fewer descriptors than the cap no port can be at it
    (an idle service read the tables four times every 2 s: ~11 ms of CPU a second)."""

    watches: list[ConnectionWatch]
    interval_s: float = 2.0
    count: Callable[[Collection[int]], dict[int, int] | None] = established_on
    descriptors: Callable[[], int | None] = open_descriptors
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def check(self) -> None:
        held = self.descriptors()
        due = [w for w in self.watches if w.full or held is None or held >= w.cap]
        if not due:
            return
        counts = self.count([w.port for w in due])
        for watch in due:
            watch.observe(None if counts is None else counts[watch.port])

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await asyncio.to_thread(self.check)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
