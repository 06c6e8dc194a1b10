"""A dependency's channel: gRPC's own retries off, one ResilienceInterceptor on (the caller
builds it around the edge's pipeline; this module builds no pipeline). Its unary calls run
the interceptor's pipeline without grpc.aio's interceptor API, in the caller's task
(grpc_aio_resilience.direct); its streams go through the interceptor's streams side.

A target may list several replicas (`host:port,host:port`). Then either gRPC balances, with
its `round_robin` policy over an `ipv4:` target (one DNS name: over its A records, as a
Kubernetes headless Service gives), or, when the edge's outlier ejection is on (or the hosts
are names `ipv4:` cannot take), grpc_aio_resilience.outlier_router does: round robin over one
channel per replica, skipping the ejected ones, with the ejections as events. Every channel
over several replicas has a router, and the interceptor asks it at each call's start whether
it routes, so a policy swap turns ejection on or off in place. The channel still has one
interceptor (and its streams side): the router is called in place of gRPC's continuation.

An `xds:///NAME` target (`mesh up --xds`) is gRPC's xDS client's: the control plane's
resources say where the replicas are and what gRPC itself does on the way (retry, A32's
max_requests, A50's ejection, A33's faults), so the channel keeps the resolver's service
config and gRPC's retries on, and our replica router steps aside (there is one channel).
"""

from __future__ import annotations

import ipaddress
import json
import weakref
from collections.abc import Sequence
from typing import Any

import grpc.aio

from grpc_aio_resilience.clock import Clock, SystemClock
from grpc_aio_resilience.direct import ResilientChannel
from grpc_aio_resilience.edge_policy import NativeRetryPolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.outlier_router import ReplicaRouter

NO_BUILTIN_RETRIES: tuple[str, Any] = ("grpc.enable_retries", 0)
"""The interceptor is the one retry owner; with both, attempts multiply unseen."""

RECONNECT_BACKOFF_CAP_S = 1.0
"""The longest a channel waits between connects to a dependency that refuses them. gRPC's
default grows 1.6x per failure up to 120 s (1, 1.6, 2.6, 4.1 s ... each +-20%): after a 4 s
outage the next connect can fall 2 s past the dependency's return, so the breaker's half-open
probe meets a channel still backing off, fails fast and re-opens the breaker for another open
time. Capped, a channel tries at least every 1.2 s: the breaker decides how long to wait."""

ROUND_ROBIN: dict[str, Any] = {"loadBalancingConfig": [{"round_robin": {}}]}
"""gRPC's own client-side balancing: each call to the next READY address of the target."""

__all__ = [
    "NO_BUILTIN_RETRIES",
    "RECONNECT_BACKOFF_CAP_S",
    "balanced_target",
    "native_retry_options",
    "replica_router",
    "resilient_channel",
    "router_of",
]

_ROUTERS: weakref.WeakKeyDictionary[grpc.aio.Channel, ReplicaRouter] = weakref.WeakKeyDictionary()


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def balanced_target(addresses: Sequence[str]) -> str | None:
    """The one gRPC target for `addresses` (`ipv4:a:1,b:2` for several IPv4 literals), or None
    when gRPC's resolvers cannot name them all at once (several host names)."""
    if len(addresses) == 1:
        return addresses[0]
    if all(_is_ipv4(a.rpartition(":")[0]) for a in addresses):
        return "ipv4:" + ",".join(addresses)
    return None


def replica_router(channel: grpc.aio.Channel) -> ReplicaRouter | None:
    """The router behind a channel resilient_channel() built over replicas, if any."""
    return _ROUTERS.get(channel)


def router_of(interceptor: ResilienceInterceptor) -> ReplicaRouter | None:
    """The router of the channel built around `interceptor` (a policy swap updates it)."""
    return interceptor.router


def resilient_channel(
    target: str,
    interceptor: ResilienceInterceptor,
    *,
    native_retry: NativeRetryPolicy | None = None,
    services: Sequence[str] = (),
    options: Sequence[tuple[str, Any]] = (),
    credentials: grpc.ChannelCredentials | None = None,
    outlier: OutlierPolicy | None = None,
    bus: EventBus | None = None,
    clock: Clock | None = None,
    dependency: str = "",
) -> ResilientChannel:
    """A channel to `target` whose calls all go through `interceptor` (an edge's pipeline, built
    by `grpc_aio_resilience.pipeline.build_pipeline`); TLS when `credentials` are given, else
    insecure. gRPC's own retries are off unless `native_retry` enables them (for comparison).
    `target` may list replicas separated by commas; `outlier` (with `bus` for its events)
    ejects misbehaving ones."""
    xds = target.startswith("xds:")
    channel_options = _channel_options(options, xds, native_retry, services)

    def channel(to: str, interceptors: list[Any]) -> grpc.aio.Channel:
        if credentials is not None:
            return grpc.aio.secure_channel(
                to, credentials, options=channel_options, interceptors=interceptors
            )
        return grpc.aio.insecure_channel(to, options=channel_options, interceptors=interceptors)

    addresses = [a.strip() for a in target.split(",")]
    balanced = balanced_target(addresses)
    if xds or (len(addresses) == 1 and balanced is not None):
        interceptor.router = None
        return ResilientChannel(
            channel(target if xds else addresses[0], [interceptor.streams()]), interceptor
        )
    # The host channel balances with round_robin over the `ipv4:` target when the router lets
    # it (ejection off); otherwise the router sends each attempt, a stream's included, on a
    # replica's own channel (made on first use: a channel connects lazily).
    router = interceptor.router = ReplicaRouter(
        dependency or (services[0] if services else target),
        addresses,
        lambda address: channel(address, []),
        outlier or OutlierPolicy(),
        bus or EventBus(),
        clock or SystemClock(),
        balanced=balanced is not None,
    )
    host = ResilientChannel(channel(balanced or addresses[0], [interceptor.streams()]), interceptor)
    _ROUTERS[host] = router
    return host


def _channel_options(
    options: Sequence[tuple[str, Any]],
    xds: bool,
    native_retry: NativeRetryPolicy | None,
    services: Sequence[str],
) -> list[tuple[str, Any]]:
    """The caller's options with the reconnect cap, and gRPC's own retries off unless asked."""
    channel_options = [o for o in options if o[0] != NO_BUILTIN_RETRIES[0]]
    channel_options.append(("grpc.max_reconnect_backoff_ms", int(RECONNECT_BACKOFF_CAP_S * 1000)))
    if xds:
        pass  # the xDS resolver's service config holds the retry policy A44 sends
    elif native_retry is not None and native_retry.enabled:
        channel_options += native_retry_options(native_retry, services)
    else:
        channel_options += [
            NO_BUILTIN_RETRIES,
            ("grpc.service_config", json.dumps(ROUND_ROBIN)),
            ("grpc.service_config_disable_resolution", 1),
        ]
    return channel_options


def native_retry_options(
    policy: NativeRetryPolicy, services: Sequence[str]
) -> list[tuple[str, Any]]:
    """gRPC's retryPolicy and retryThrottling as a service config (gRFC A6), for comparison.

    The policy model refuses it together with our retry strategy, so there is still one owner.
    """
    config = {
        "methodConfig": [
            {
                "name": [{"service": s} for s in services] or [{}],
                "retryPolicy": {
                    "maxAttempts": policy.max_attempts,
                    "initialBackoff": f"{policy.initial_backoff_s}s",
                    "maxBackoff": f"{policy.max_backoff_s}s",
                    "backoffMultiplier": policy.backoff_multiplier,
                    "retryableStatusCodes": list(policy.retryable_codes),
                },
            }
        ],
        **ROUND_ROBIN,
        "retryThrottling": {"maxTokens": int(policy.max_tokens), "tokenRatio": policy.token_ratio},
    }
    return [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(config)),
        ("grpc.service_config_disable_resolution", 1),
    ]
