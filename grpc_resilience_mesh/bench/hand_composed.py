"""The same client-side job done by hand with the libraries people use today: tenacity's retries
(full jitter, on UNAVAILABLE), aiobreaker's breaker and an asyncio.Semaphore as the bulkhead, around
a plain grpc.aio stub. The overhead bench runs it beside our pipeline
(grpc_resilience_mesh.bench.overhead), so the comparison is the one a user would make before
switching."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import grpc
import grpc.aio
from aiobreaker import CircuitBreaker
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from grpc_aio_resilience import EdgePolicy


def _transient(err: BaseException) -> bool:
    return isinstance(err, grpc.aio.AioRpcError) and err.code() is grpc.StatusCode.UNAVAILABLE


class HandComposedStub:
    """A stub-shaped caller whose GetProfile does what the edge's pipeline does on the success
    path: a bulkhead slot per logical call, the total deadline, up to `max_attempts` attempts
    with full-jitter backoff on UNAVAILABLE, a breaker around each attempt and each attempt's
    own timeout. Built from the same EdgePolicy as the pipeline it is compared with."""

    def __init__(self, stub: Any, edge: EdgePolicy) -> None:
        self._get_profile = stub.GetProfile
        self._bulkhead = asyncio.Semaphore(edge.bulkhead.max_concurrent)
        self._breaker = CircuitBreaker(
            fail_max=edge.breaker.consecutive_failures,
            timeout_duration=timedelta(seconds=edge.breaker.open_s),
        )
        self._total_s = edge.deadline.total_s
        self._attempt_s = edge.deadline.attempt_s
        self._retrying = AsyncRetrying(
            stop=stop_after_attempt(edge.retry.max_attempts) | stop_before_delay(self._total_s),
            wait=wait_random_exponential(
                multiplier=edge.retry.base_backoff_s, max=edge.retry.max_backoff_s
            ),
            retry=retry_if_exception(_transient),
            reraise=True,
        )

    # The generated stub's own signature, so the bench calls both alike.
    async def GetProfile(self, request: Any, timeout: float | None = None) -> Any:  # noqa: ASYNC109
        total_s = self._total_s if timeout is None else min(timeout, self._total_s)
        loop = asyncio.get_running_loop()
        deadline_s = loop.time() + total_s
        async with self._bulkhead:
            # AsyncRetrying.__call__ copies itself per call, as the @retry decorator does.
            return await self._retrying(self._attempt, request, deadline_s, loop)

    async def _attempt(
        self, request: Any, deadline_s: float, loop: asyncio.AbstractEventLoop
    ) -> Any:
        timeout_s = min(self._attempt_s, deadline_s - loop.time())
        return await self._breaker.call_async(self._get_profile, request, timeout=timeout_s)
