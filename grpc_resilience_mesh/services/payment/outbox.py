"""The outbox relay: hand committed receipt jobs to the queue, however long Redis is away.

Charge commits the job row with the charge and wakes the relay; the relay adds each unsent
row to BullMQ with job id `receipt-<charge id>` and then marks it sent. If the process dies
between the two, the row is added again on restart and BullMQ keeps the first job of that id:
a charge never queues two receipts. While Redis is unreachable the relay retries with
exponential backoff (capped) and payment keeps serving: its readiness does not depend on Redis.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

import redis.asyncio as aioredis
from bullmq import Queue

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.contracts.receipt_job import (
    JOB_NAME,
    QUEUE,
    RECEIPT_QUEUE,
    REDIS_PASSWORD,
    ReceiptRetention,
    ReceiptRetry,
    redis_url,
)
from grpc_resilience_mesh.services.payment.ledger import Ledger
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics

log = logging.getLogger("grpc_resilience_mesh.services.payment.outbox")


class OutboxRelay:
    """Polls the ledger's outbox (and wakes on every new charge) and enqueues what it finds."""

    def __init__(
        self,
        ledger: Ledger,
        redis_addr: str,
        policy: ReceiptRetry,
        metrics: JobMetrics,
        *,
        queue: str = QUEUE,
        poll_s: float = 1.0,
        max_backoff_s: float = 5.0,
        retention: ReceiptRetention | None = None,
        password: str = "",
    ) -> None:
        self._ledger = ledger
        self._policy = policy
        self._retention = retention or ReceiptRetention()
        self._metrics = metrics
        self._poll_s = poll_s
        self._max_backoff_s = max_backoff_s
        self._client = aioredis.Redis.from_url(
            redis_url(redis_addr, password),
            decode_responses=True,
            socket_connect_timeout=1,
            socket_timeout=3,
            retry_on_timeout=False,
        )
        self._queue = Queue(queue, {"connection": self._client})
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="outbox-relay")

    def notify(self) -> None:
        """A charge committed a job: relay it now rather than at the next poll."""
        self._wake.set()

    async def relay_once(self) -> int:
        """Enqueue every unsent row; return how many. Raises when Redis cannot be reached."""
        total = 0
        while rows := await self._ledger.unsent(100):
            for row in rows:
                data: dict[str, Any] = json.loads(row.payload)
                await self._queue.add(
                    JOB_NAME, data, self._policy.job_options(row.job_id, self._retention)
                )
                self._metrics.enqueued()
            await self._ledger.mark_sent([r.job_id for r in rows])
            total += len(rows)
        return total

    async def _loop(self) -> None:
        delay = 0.0
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=delay or self._poll_s)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                sent = await self.relay_once()
                if delay:
                    log.info("redis back: outbox relayed", extra={"jobs": sent})
                delay = 0.0
            except asyncio.CancelledError:
                raise
            except Exception as err:
                delay = min(max(delay * 2, 0.1), self._max_backoff_s)
                log.warning(
                    "outbox: enqueue failed",
                    extra={"error": f"{type(err).__name__}: {err}", "retry_s": delay},
                )
            self._metrics.outbox_pending(await self._ledger.outbox_pending())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._queue.close()


def relay_from_env(
    ledger: Ledger, redis_addr: str, metrics: JobMetrics, environ: Mapping[str, str] | None = None
) -> OutboxRelay:
    """RECEIPT_* (see ReceiptRetry, ReceiptRetention), RECEIPT_QUEUE (default receipts),
    REDIS_PASSWORD (the queue's AUTH; unset or empty: none)."""
    env = settings.env_or_os(environ)
    return OutboxRelay(
        ledger,
        redis_addr,
        ReceiptRetry.from_env(env),
        metrics,
        queue=RECEIPT_QUEUE.read(env),
        retention=ReceiptRetention.from_env(env),
        password=REDIS_PASSWORD.read(env),
    )
