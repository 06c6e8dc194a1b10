"""The grpc core options every service's servers and channels share, and binding a port with
an error that names its variable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grpc_resilience_mesh.services.config_error import ConfigError


def message_size_options(max_bytes: int) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", max_bytes),
        ("grpc.max_send_message_length", max_bytes),
    ]


PENDING_CALLS_LIMIT = 10_000
"""Calls grpc core may hold for us before the application picks them up (see below)."""


def exclusive_port_options() -> list[tuple[str, Any]]:
    """A port another process holds is a bind error, not a port shared with it.

    grpc core sets SO_REUSEPORT on its listeners by default, so a second server (a second mesh
    started on the same ports, another program's gRPC server) bound the same address without an
    error and the kernel split the connections between them: a caller got UNIMPLEMENTED from a
    stranger for every call of its connection (a test run saw 2,000 of 2,000)."""
    return [("grpc.so_reuseport", 0)]


def pending_call_options(limit: int = PENDING_CALLS_LIMIT) -> list[tuple[str, Any]]:
    """No silent drops in grpc core: every call reaches our interceptors, which count it and
    refuse it, if they must, with RESOURCE_EXHAUSTED and a pushback.

    grpc.aio takes calls from core one at a time on the event loop; calls that arrive faster
    wait in core's queue of unrequested calls. Past `grpc.server.max_pending_requests` (1000)
    core drops arrivals at random (certainly past the hard limit, 3000), before any Python
    code runs: the caller sees CANCELLED with no pushback and no metric counts it. A burst of
    2,000 GetHome got 139-209 of those. With the soft limit equal to a hard limit far above
    anything the rate limiter admits at once (MESH_RATE_LIMIT_BURST, 4000), admission is
    decided where it is visible: the rate limiter and the in-flight shedding. (grpc.aio's
    `maximum_concurrent_rpcs` is not used either: it refuses with RESOURCE_EXHAUSTED, but
    before the interceptors, so uncounted and without pushback.)
    """
    return [
        ("grpc.server.max_pending_requests", limit),
        ("grpc.server.max_pending_requests_hard_limit", limit),
    ]


def bind(var: str, addr: str, add_port: Callable[[str], int]) -> int:
    """`add_port(addr)`'s port; an address that parses but cannot be bound (not this host's,
    or in use) is a ConfigError naming the variable, not a traceback."""
    try:
        port = add_port(addr)
    except (OSError, RuntimeError) as err:
        reason = getattr(err, "strerror", None) or " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(f"{var}={addr!r} cannot be bound: {reason}") from None
    if port == 0:
        raise ConfigError(f"{var}={addr!r} cannot be bound: not an address of this host, or in use")
    return port
