"""bullmq's Worker with three fixes this project's measurements needed (bullmq 3.4.4).

- Rate limiter: when the limiter says "wait N ms", the stock worker treats the queue as
  drained and blocks for `drainDelay` (5 s) instead: 30 jobs at 10/s took minutes. Here it
  sleeps the N ms and asks again, as BullMQ for Node does.
- Timer resolution: the blocking connection never learns the Redis version, so it assumes
  Redis < 6 and rounds every block up to whole seconds: a 200 ms backoff waited 1 s. `ready()`
  asks for the version on both connections before the worker runs.
- Delayed jobs held for minutes: the worker waits for its next job in one blocking read
  (BZPOPMIN, 5 s when idle, up to 10 s or until the next delayed job is due), but redis-py
  cuts every read at its default 5 s socket timeout, and the retries bullmq configures (20,
  backing off up to 20 s) re-send the same read, which times out again: a receipt due in 8 s
  waited up to about 7 minutes, until the retries gave up or another job's wake-up came
  while a read was in flight. Here reads block at most MAX_BLOCK_S under an explicit longer
  socket timeout, and a lost connection is retried within a second. An empty read is
  followed by a promotion of every due delayed job, so a job is at most MAX_BLOCK_S late
  even when the wake-up meant for it is lost (a reply dropped by a proxy, another worker
  killed after it took the wake-up).
"""

from __future__ import annotations

import asyncio
from typing import Any

from bullmq import Worker
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from grpc_resilience_mesh.services.contracts.receipt_job import redis_url

MAX_BLOCK_S = 1.0
"""The longest blocking read for the next job: how late a due delayed job can be at worst."""
SOCKET_TIMEOUT_S = MAX_BLOCK_S + 4.0
"""Longer than any blocking read; short enough to notice a connection that went silent."""
RETRY_DELAY_MS = 1000
"""bullmq's pause after its client gave up on Redis (runRetryDelay; its default is 15 s)."""


def connection_url(addr: str, password: str = "") -> str:
    """The worker's Redis URL: the explicit socket timeouts its blocking reads need."""
    return (
        f"{redis_url(addr, password)}?socket_timeout={SOCKET_TIMEOUT_S}"
        "&socket_connect_timeout=2&socket_keepalive=true"
    )


def _quick_retry() -> Retry:
    return Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=5)


class QueueWorker(Worker):  # type: ignore[misc]
    """bullmq.Worker that honours the limiter's wait, blocks with sub-second precision and
    never longer than MAX_BLOCK_S, and reconnects within a second."""

    limitUntil: int
    drained: bool

    def __init__(self, name: str, processor: Any, opts: dict[str, Any]) -> None:
        super().__init__(name, processor, {"runRetryDelay": RETRY_DELAY_MS, **opts})
        for connection in (self.redisConnection, self.blockingRedisConnection):
            connection.conn.set_retry(_quick_retry())

    def getBlockTimeout(self, block_until: int) -> float:
        return float(min(super().getBlockTimeout(block_until), MAX_BLOCK_S))

    async def ready(self) -> None:
        """Raises while Redis cannot be reached; call (and retry) before run()."""
        await self.blockingRedisConnection.getRedisVersion()
        await self.redisConnection.getRedisVersion()

    async def getNextJob(self, token: str) -> Any:
        if self.limitUntil > 0:
            wait_ms, self.limitUntil = self.limitUntil, 0
            await asyncio.sleep(wait_ms / 1000)
        return await super().getNextJob(token)

    async def nextJobFromJobData(
        self,
        job_data: Any = None,
        job_id: Any = None,
        limit_until: int = 0,
        delay_until: int = 0,
        token: str | None = None,
    ) -> Any:
        job = await super().nextJobFromJobData(job_data, job_id, limit_until, delay_until, token)
        if job is None and self.limitUntil > 0:
            self.drained = False  # rate-limited, not empty: come back when the window opens
        return job
