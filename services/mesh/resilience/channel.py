"""Builds a dependency's channel: gRPC's own retries off, one ResilienceInterceptor on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc.aio

from mesh.resilience.attempt import AttemptObserver
from mesh.resilience.bulkhead import Bulkhead
from mesh.resilience.clock import Clock, SystemClock
from mesh.resilience.events import EventBus
from mesh.resilience.interceptor import ResilienceInterceptor
from mesh.resilience.pipeline import CallObserver, Pipeline, build_pipeline
from mesh.resilience.policy import EdgePolicy, NativeRetryPolicy

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
    bulkhead_pools: dict[str, Bulkhead] | None = None,
    services: Sequence[str] = (),
    call_observer: CallObserver | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    interceptor_out: list[ResilienceInterceptor] | None = None,
) -> grpc.aio.Channel:
    """A channel to `target` protected by `policy` (the edge's pipeline); TLS when
    `credentials` are given, else insecure.

    `edge` is the topology proxy name the policy was chosen by; `dependency` labels every event
    and metric of calls on this channel. The interceptor is appended to `interceptor_out` when
    given, so its `pipeline` can be replaced when the policy changes at runtime.
    """
    clock = clock or SystemClock()
    pipeline = build_pipeline(
        policy,
        dependency=dependency,
        bus=bus,
        clock=clock,
        attempt_observer=attempt_observer,
        bulkhead_pools=bulkhead_pools,
        call_observer=call_observer,
    )
    interceptor = ResilienceInterceptor(pipeline, dependency=dependency, clock=clock)
    if interceptor_out is not None:
        interceptor_out.append(interceptor)
    channel_options = [o for o in options if o[0] != NO_BUILTIN_RETRIES[0]]
    if policy.native_retry.enabled:
        channel_options += native_retry_options(policy.native_retry, services)
    else:
        channel_options.append(NO_BUILTIN_RETRIES)
    if credentials is not None:
        return grpc.aio.secure_channel(
            target, credentials, options=channel_options, interceptors=[interceptor]
        )
    return grpc.aio.insecure_channel(target, options=channel_options, interceptors=[interceptor])


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
        "retryThrottling": {"maxTokens": int(policy.max_tokens), "tokenRatio": policy.token_ratio},
    }
    return [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(config)),
        ("grpc.service_config_disable_resolution", 1),
    ]
