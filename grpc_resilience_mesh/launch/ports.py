"""The ports of the embedded mesh: the topology's defaults, or free ones picked all at once.

Free ports are picked *below* the kernel's ephemeral range. A port that `bind(0)` hands out
comes from that range, and between choosing it and a child process binding it, any outgoing
connection on the machine may take it as its source port (CI saw `address already in use`
that way, once every few full runs). Below the range no connect() ever lands. Two processes
picking at once are kept apart by a lock file per port, held by the process that picked it
(released when it exits, or after `_HELD` newer picks: by then the port is long bound)."""

from __future__ import annotations

import errno
import fcntl
import os
import random
import socket
import tempfile
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.services.topology import (
    INSTANCES,
    PEERS,
    PROXIES,
    TOXIPROXY_API_PORT,
    embedded_port,
)

_LOWEST = 10_000  # below it: well-known and registered services people run on their machines
_HELD = 256  # picks whose lock this process keeps (fds); older ones are released
_held: deque[int] = deque()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 49152, 65535  # IANA's dynamic range: macOS and Windows use it


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"grpc-resilience-ports-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _reserve(port: int, directory: Path) -> int | None:
    """An open fd holding `port`'s lock, or None when another process holds it."""
    fd = os.open(directory / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


def _start(n: int) -> int:
    """Where among the `n` candidates to begin: random, so processes seldom meet at all."""
    return random.randrange(n)


def _bindable(port: int, host: str, reuse: bool = False) -> bool:
    # No SO_REUSEADDR: a port with a listener or a connection still in TIME_WAIT is refused.
    # With it (as gRPC binds), TIME_WAIT passes; a listener or a live connection does not.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        if reuse:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _keep(fd: int) -> None:
    _held.append(fd)
    while len(_held) > _HELD:
        os.close(_held.popleft())


def _bind_zero(count: int, host: str) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            sockets.append(s)
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports on `host` that nothing listens on and no connect() will take
    before our own process binds them (see the module's docstring)."""
    low, _ = _ephemeral_range()
    if low - _LOWEST < 1000:  # an odd machine with no room below its range: the kernel's pick
        return _bind_zero(count, host)
    directory = _lock_dir()
    defaults = set(Ports.default().named())  # a picked port must not block a later `mesh up`
    candidates = [p for p in range(_LOWEST, low) if p not in defaults]
    start = _start(len(candidates))
    picked: list[int] = []
    for port in candidates[start:] + candidates[:start]:
        fd = _reserve(port, directory)
        if fd is None:
            continue
        if not _bindable(port, host):
            os.close(fd)
            continue
        _keep(fd)
        picked.append(port)
        if len(picked) == count:
            return picked
    raise OSError(errno.EADDRINUSE, f"no {count} free ports in {_LOWEST}..{low - 1} on {host}")


@dataclass
class Ports:
    """Every port the embedded mesh uses; `auto()` picks free ones (for tests and CI)."""

    listen: dict[str, int]
    admin: dict[str, int]
    metrics: dict[str, int]
    proxies: dict[str, int]
    toxiproxy_api: int

    @classmethod
    def default(cls, gateway_port: int | None = None) -> Ports:
        listen = {s.name: embedded_port(s.port) for s in (*INSTANCES, *PEERS)}
        if gateway_port:
            listen["gateway"] = gateway_port
        return cls(
            listen=listen,
            admin={s.name: embedded_port(s.admin_port) for s in INSTANCES},
            metrics={s.name: s.metrics_port for s in INSTANCES},
            proxies={p.name: p.port for p in PROXIES},
            toxiproxy_api=TOXIPROXY_API_PORT,
        )

    @classmethod
    def auto(cls) -> Ports:
        """Free ports, all different: every one stays bound until all are picked (ports picked
        one at a time can come back twice, and two proxies on one port break an edge)."""
        names = [
            *(("listen", s.name) for s in (*INSTANCES, *PEERS)),
            *(("admin", s.name) for s in INSTANCES),
            *(("metrics", s.name) for s in INSTANCES),
            *(("proxies", p.name) for p in PROXIES),
            ("api", "toxiproxy"),
        ]
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        table: dict[str, dict[str, int]] = {"listen": {}, "admin": {}, "metrics": {}, "proxies": {}}
        for (kind, name), port in ports.items():
            if kind != "api":
                table[kind][name] = port
        return cls(**table, toxiproxy_api=ports[("api", "toxiproxy")])

    def named(self) -> dict[int, str]:
        """Every port and what binds it (`gateway`, `admin of profile`, `proxy gateway_to_x`)."""
        return {
            **{port: name for name, port in self.listen.items()},
            **{port: f"admin of {name}" for name, port in self.admin.items()},
            **{port: f"metrics of {name}" for name, port in self.metrics.items()},
            **{port: f"proxy {name}" for name, port in self.proxies.items()},
            self.toxiproxy_api: "Toxiproxy API",
        }

    def held(self, host: str = "127.0.0.1", toxiproxy: bool = True) -> dict[int, str]:
        """The ports a child could not bind right now (a listener, or an outgoing connection
        using it as its source port), with what would have bound each; checked before start so
        the error names the port instead of a child's log saying `address already in use`.
        `toxiproxy=False` (`mesh up --direct`) leaves out Toxiproxy's, never opened then."""
        skipped = set() if toxiproxy else {*self.proxies.values(), self.toxiproxy_api}
        return {
            p: name
            for p, name in self.named().items()
            if p not in skipped and not _bindable(p, host, reuse=True)
        }
