"""The receipt worker: take a receipt job, send it once, classify what went wrong.

Idempotency: after the SMTP server accepts a receipt, the worker sets `<queue>:sent:<job id>`
in Redis; an attempt that finds the marker completes without sending. So a job run twice
(a retry, or a stalled job recovered after its worker died) sends once, except in one window:
the worker dies (or loses Redis) after the SMTP server accepted the message and before the
marker is written. Then the next run sends the receipt again: at-least-once, not exactly-once.
Every receipt carries Message-ID <receipt-<charge id>@mesh.local>, so the mailbox (or a
provider that dedupes on it) can tell the copies apart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from bullmq import UnrecoverableError
from opentelemetry import trace

from grpc_resilience_mesh.services.contracts.receipt_job import (
    BACKOFF_TYPE,
    STALLED_REASON,
    BadPayload,
    Receipt,
    backoff_delay_ms,
    redis_url,
)
from grpc_resilience_mesh.services.customers import customers
from grpc_resilience_mesh.services.notification import job_span
from grpc_resilience_mesh.services.notification.bullmq_worker import QueueWorker, connection_url
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.notification.smtp import SendError, SmtpSender, render
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics

log = logging.getLogger("grpc_resilience_mesh.services.notification")


def backoff_strategy(attempts_made: int, _type: str, _err: Any, job: Any) -> int:
    """bullmq's custom backoff hook: exponential with jitter, from the job's own options."""
    backoff = job.opts.get("backoff") or {}
    if backoff.get("type") != BACKOFF_TYPE:
        return -1  # an unknown strategy: fail rather than guess
    return backoff_delay_ms(attempts_made, backoff)


BeforeSend = Callable[[Any], Awaitable[None]]
"""Called with a job's data before it is sent: the drill worker's seam (the product sets none)."""


class ReceiptWorker:
    """One BullMQ worker on the receipts queue, started in the service's event loop.

    `tracer` (the service's, when tracing is on) makes one span per attempt (job_span.py)."""

    def __init__(
        self,
        config: NotificationConfig,
        metrics: JobMetrics,
        tracer: trace.Tracer | None = None,
        before_send: BeforeSend | None = None,
    ) -> None:
        self.config = config
        self._before_send = before_send
        self.metrics = metrics
        self._tracer = tracer or trace.NoOpTracer()
        self._planned_ms: dict[str, int] = {}
        """Backoff delays an attempt's span announced, for bullmq's hook to return."""
        self._redis = aioredis.Redis.from_url(
            redis_url(config.redis_addr, config.redis_password),
            socket_connect_timeout=2,
            socket_timeout=5,
        )
        self._smtp = SmtpSender(config.smtp_addr, config.smtp_timeout_s, config.concurrency)
        opts: dict[str, Any] = {
            "connection": connection_url(config.redis_addr, config.redis_password),
            "autorun": False,
            "concurrency": config.concurrency,
            "lockDuration": config.lock_ms,
            "stalledInterval": config.stalled_interval_ms,
            "maxStalledCount": config.max_stalled,
            "settings": {"backoffStrategy": self._backoff},
        }
        if config.rate_max:
            opts["limiter"] = {"max": config.rate_max, "duration": config.rate_duration_ms}
        self.worker = QueueWorker(config.queue, self.process, opts)
        self.worker.on("completed", self._on_completed)
        self.worker.on("failed", self._on_failed)
        self.worker.on("stalled", self._on_stalled)
        self.worker.on("error", self._on_error)
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="receipt-worker")

    async def _run(self) -> None:
        delay = 0.1
        while True:  # the service is ready without Redis; the worker waits for it
            try:
                await self.worker.ready()
                break
            except Exception as err:
                log.warning("redis not reachable", extra={"error": str(err), "retry_s": delay})
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        log.info(
            "worker running",
            extra={"queue": self.config.queue, "concurrency": self.config.concurrency},
        )
        await self.worker.run()

    async def process(self, job: Any, _token: str) -> dict[str, Any]:
        started = time.monotonic()
        attempt, attempts = job_span.attempt_of(job)
        with job_span.attempt_span(self._tracer, self.config.queue, job) as span:
            try:
                result = await self._send_once(job)
            except UnrecoverableError as err:
                self.metrics.attempt("permanent", time.monotonic() - started)
                job_span.job_failed(span, attempt, err, "permanent")
                raise
            except Exception as err:
                self.metrics.attempt("transient", time.monotonic() - started)
                if attempt < attempts:
                    delay_ms = backoff_strategy(attempt, BACKOFF_TYPE, err, job)
                    if delay_ms >= 0:
                        self._planned_ms[str(job.id)] = delay_ms
                        job_span.retry_scheduled(span, attempt, err, delay_ms)
                else:
                    job_span.job_failed(span, attempt, err, "exhausted")
                raise
            self.metrics.attempt("ok", time.monotonic() - started)
            span.add_event(job_span.EV_SENT if result["sent"] else job_span.EV_ALREADY_SENT)
            return result

    def _backoff(self, attempts_made: int, type_: str, err: Any, job: Any) -> int:
        """bullmq's backoff hook: the delay the failed attempt's span announced."""
        planned = self._planned_ms.pop(str(job.id), None)
        return backoff_strategy(attempts_made, type_, err, job) if planned is None else planned

    async def _send_once(self, job: Any) -> dict[str, Any]:
        try:
            receipt = Receipt.from_data(job.data)
        except BadPayload as err:
            raise UnrecoverableError(str(err)) from None
        user = customers().users.get(receipt.user_id)
        if user is None:
            raise UnrecoverableError(f"unknown user {receipt.user_id}: nobody to send it to")
        if self._before_send is not None:
            await self._before_send(job.data)
        marker = f"{self.config.queue}:sent:{job.id}"
        if await self._redis.exists(marker):
            self.metrics.duplicate_prevented()
            return {"sent": False, "reason": "already sent by an earlier run"}
        try:
            await self._smtp.send(render(receipt, user, self.config.sender, str(job.id)))
        except SendError as err:
            if not err.transient:
                raise UnrecoverableError(str(err)) from None
            raise
        await self._redis.set(marker, str(time.time()), ex=int(self.config.sent_ttl_s))
        return {"sent": True, "to": user.email}

    def _on_completed(self, _job: Any, _result: Any) -> None:
        self.metrics.completed()

    def _on_failed(self, job: Any, err: BaseException) -> None:
        if str(err) == STALLED_REASON:  # BullMQ failed it past maxStalledCount: a poison job?
            self.metrics.failed("stalled")
        elif isinstance(err, UnrecoverableError):
            self.metrics.failed("permanent")
        elif job.attemptsMade >= int(job.opts.get("attempts") or 1):
            self.metrics.failed("exhausted")
        else:
            self.metrics.retried()
        log.info(
            "attempt failed", extra={"job": job.id, "attempt": job.attemptsMade, "error": str(err)}
        )

    def _on_stalled(self, job_id: str, *_: Any) -> None:
        self.metrics.stalled()
        log.warning("stalled job moved back to wait", extra={"job": job_id})

    def _on_error(self, err: BaseException, *_: Any) -> None:
        log.warning("worker error", extra={"error": f"{type(err).__name__}: {err}"})

    async def close(self) -> None:
        """Finish the jobs in hand, then stop (SIGTERM's graceful path); once."""
        if self._closed:
            return
        self._closed = True
        if self._task is not None and self.worker.running:
            await self.worker.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._redis.aclose()
        self._smtp.close()
