"""A dependency's channel: gRPC's own retries off, one ResilienceInterceptor on (the caller
builds it around the edge's pipeline; this module builds no pipeline)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc.aio

from mesh.resilience.interceptor import ResilienceInterceptor
from mesh.resilience.policy import NativeRetryPolicy

NO_BUILTIN_RETRIES: tuple[str, Any] = ("grpc.enable_retries", 0)
"""The interceptor is the one retry owner; with both, attempts multiply unseen."""

__all__ = ["NO_BUILTIN_RETRIES", "native_retry_options", "resilient_channel"]


def resilient_channel(
    target: str,
    interceptor: ResilienceInterceptor,
    *,
    native_retry: NativeRetryPolicy | None = None,
    services: Sequence[str] = (),
    options: Sequence[tuple[str, Any]] = (),
    credentials: grpc.ChannelCredentials | None = None,
) -> grpc.aio.Channel:
    """A channel to `target` whose calls all go through `interceptor` (an edge's pipeline, built
    by `mesh.resilience.pipeline.build_pipeline`); TLS when `credentials` are given, else
    insecure. gRPC's own retries are off unless `native_retry` enables them (for comparison)."""
    channel_options = [o for o in options if o[0] != NO_BUILTIN_RETRIES[0]]
    if native_retry is not None and native_retry.enabled:
        channel_options += native_retry_options(native_retry, services)
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
