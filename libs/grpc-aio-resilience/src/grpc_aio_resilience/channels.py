"""A protected channel in one call, shaped like grpc.aio's own constructors.

    channel = grpc_aio_resilience.insecure_channel("localhost:50051", EdgePolicy())
    stub = kv_pb2_grpc.KVStub(channel)

is `build_pipeline` + `ResilienceInterceptor` + `resilient_channel` with the defaults a service
of one's own wants; the pieces stay public for what this does not cover (bulkhead pools shared
by several dependencies, attempt and call observers for tracing, a custom clock).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.channel import replica_router, resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline

_PIPELINES: weakref.WeakKeyDictionary[grpc.aio.Channel, Pipeline] = weakref.WeakKeyDictionary()


def insecure_channel(
    target: str,
    policy: EdgePolicy | None = None,
    *,
    services: Sequence[str] = (),
    dependency: str = "",
    bus: EventBus | None = None,
    options: Sequence[tuple[str, Any]] = (),
    send_deadline_header: bool = False,
) -> grpc.aio.Channel:
    """A plaintext channel to `target` (one address, or replicas separated by commas) whose
    calls run through `policy`'s pipeline (default `EdgePolicy()`).

    `services` (`pkg.Service`, their protobuf modules imported) are checked for traps at build
    (a method never retried, ...: `ResiliencePolicyWarning`); `dependency` names the edge in
    events (default: the first of `services`, else the target); `bus` receives every decision
    as an event; `send_deadline_header`: each attempt sends its deadline as
    `resilience-timeout-ms`, which the server's intake gate (`IntakePolicy`) reads; off where
    the server has none."""
    return _protected(
        target, None, policy, services, dependency, bus, options, send_deadline_header
    )


def secure_channel(
    target: str,
    credentials: grpc.ChannelCredentials,
    policy: EdgePolicy | None = None,
    *,
    services: Sequence[str] = (),
    dependency: str = "",
    bus: EventBus | None = None,
    options: Sequence[tuple[str, Any]] = (),
    send_deadline_header: bool = False,
) -> grpc.aio.Channel:
    """`insecure_channel` over TLS with `credentials` (grpc.ssl_channel_credentials(...))."""
    return _protected(
        target, credentials, policy, services, dependency, bus, options, send_deadline_header
    )


async def close_channel(channel: grpc.aio.Channel, grace: float | None = None) -> None:
    """Close `channel` and, when its target listed replicas, each replica's own channel (the
    router dials one per replica; `channel.close()` alone leaves those open). Works for any
    channel `resilient_channel` made too."""
    router = replica_router(channel)
    if router is not None:
        await router.close()
    await channel.close(grace)


def pipeline_of(channel: grpc.aio.Channel) -> Pipeline:
    """The pipeline a channel of this module runs its calls through (for `describe()`);
    KeyError for any other channel."""
    return _PIPELINES[channel]


def _protected(
    target: str,
    credentials: grpc.ChannelCredentials | None,
    policy: EdgePolicy | None,
    services: Sequence[str],
    dependency: str,
    bus: EventBus | None,
    options: Sequence[tuple[str, Any]],
    send_deadline_header: bool,
) -> grpc.aio.Channel:
    policy = policy or EdgePolicy()
    bus = bus or EventBus()
    clock = SystemClock()
    name = dependency or (services[0] if services else target)
    with warnings.catch_warnings(record=True) as caught:  # the traps, said at the user's line
        warnings.simplefilter("always")
        pipeline = build_pipeline(
            policy,
            dependency=name,
            bus=bus,
            clock=clock,
            wait_header=send_deadline_header,
            services=services,
        )
    for warning in caught:
        warnings.warn(warning.message, warning.category, stacklevel=3)
    interceptor = ResilienceInterceptor(pipeline, dependency=name, clock=clock)
    channel = resilient_channel(
        target,
        interceptor,
        native_retry=policy.native_retry,
        services=services,
        options=options,
        credentials=credentials,
        outlier=policy.outlier,
        bus=bus,
        clock=clock,
        dependency=name,
    )
    _PIPELINES[channel] = pipeline
    return channel
