"""Builds a dependency's channel: gRPC's own retries off, one ResilienceInterceptor on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc.aio

from mesh.resilience.attempt import AttemptObserver
from mesh.resilience.clock import Clock, SystemClock
from mesh.resilience.events import EventBus
from mesh.resilience.interceptor import ResilienceInterceptor
from mesh.resilience.pipeline import Pipeline, build_pipeline
from mesh.resilience.policy import EdgePolicy

NO_BUILTIN_RETRIES: tuple[str, Any] = ("grpc.enable_retries", 0)
"""The interceptor is the one retry owner; with both, attempts multiply unseen."""

__all__ = ["NO_BUILTIN_RETRIES", "Pipeline", "build_pipeline", "resilient_channel"]


def resilient_channel(
    target: str,
    *,
    edge: str,
    dependency: str,
    policy: EdgePolicy,
    bus: EventBus,
    clock: Clock | None = None,
    options: Sequence[tuple[str, Any]] = (),
    attempt_observer: AttemptObserver | None = None,
) -> grpc.aio.Channel:
    """An insecure channel to `target` protected by `policy` (the edge's pipeline).

    `edge` is the topology proxy name the policy was chosen by; `dependency` labels every event
    and metric of calls on this channel.
    """
    clock = clock or SystemClock()
    pipeline = build_pipeline(
        policy, dependency=dependency, bus=bus, clock=clock, attempt_observer=attempt_observer
    )
    interceptor = ResilienceInterceptor(pipeline, dependency=dependency, clock=clock)
    channel_options = [o for o in options if o[0] != NO_BUILTIN_RETRIES[0]]
    channel_options.append(NO_BUILTIN_RETRIES)
    return grpc.aio.insecure_channel(target, options=channel_options, interceptors=[interceptor])
