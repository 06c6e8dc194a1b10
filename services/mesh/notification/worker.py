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
from typing import Any

import redis.asyncio as aioredis
from bullmq import UnrecoverableError
from opentelemetry import propagate, trace

from mesh.catalogue import catalogue
from mesh.notification.bullmq_worker import QueueWorker, connection_url
from mesh.notification.config import NotificationConfig
from mesh.notification.metrics import JobMetrics
from mesh.notification.receipt import BACKOFF_TYPE, BadPayload, Receipt, backoff_delay_ms
from mesh.notification.smtp import SendError, SmtpSender, render

log = logging.getLogger("mesh.notification")
tracer = trace.get_tracer(__name__)


def backoff_strategy(attempts_made: int, _type: str, _err: Any, job: Any) -> int:
    """bullmq's custom backoff hook: exponential with jitter, from the job's own options."""
    backoff = job.opts.get("backoff") or {}
    if backoff.get("type") != BACKOFF_TYPE:
        return -1  # an unknown strategy: fail rather than guess
    return backoff_delay_ms(attempts_made, backoff)


class ReceiptWorker:
    """One BullMQ worker on the receipts queue, started in the service's event loop."""

    def __init__(self, config: NotificationConfig, metrics: JobMetrics) -> None:
        self.config = config
        self.metrics = metrics
        self._redis = aioredis.Redis.from_url(
            f"redis://{config.redis_addr}", socket_connect_timeout=2, socket_timeout=5
        )
        self._smtp = SmtpSender(config.smtp_addr, config.smtp_timeout_s, config.concurrency)
        opts: dict[str, Any] = {
            "connection": connection_url(config.redis_addr),
            "autorun": False,
            "concurrency": config.concurrency,
            "lockDuration": config.lock_ms,
            "stalledInterval": config.stalled_interval_ms,
            "maxStalledCount": config.max_stalled,
            "settings": {"backoffStrategy": backoff_strategy},
        }
        if config.rate_max:
            opts["limiter"] = {"max": config.rate_max, "duration": config.rate_duration_ms}
        self.worker = QueueWorker(config.queue, self.process, opts)
        self.worker.on("completed", self._on_completed)
        self.worker.on("failed", self._on_failed)
        self.worker.on("stalled", self._on_stalled)
        self.worker.on("error", self._on_error)
        self._task: asyncio.Task[None] | None = None

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
        carrier = job.data.get("trace") if isinstance(job.data, dict) else None
        parent = propagate.extract(carrier if isinstance(carrier, dict) else {})
        with tracer.start_as_current_span(
            "receipts process",
            context=parent,
            kind=trace.SpanKind.CONSUMER,
            attributes={
                "messaging.system": "bullmq",
                "messaging.destination.name": self.config.queue,
                "messaging.message.id": str(job.id),
                "mesh.job.attempt": job.attemptsMade + 1,
            },
        ):
            try:
                result = await self._send_once(job)
            except UnrecoverableError:
                self.metrics.attempt("permanent", time.monotonic() - started)
                raise
            except Exception:
                self.metrics.attempt("transient", time.monotonic() - started)
                raise
            self.metrics.attempt("ok", time.monotonic() - started)
            return result

    async def _send_once(self, job: Any) -> dict[str, Any]:
        try:
            receipt = Receipt.from_data(job.data)
        except BadPayload as err:
            raise UnrecoverableError(str(err)) from None
        user = catalogue().users.get(receipt.user_id)
        if user is None:
            raise UnrecoverableError(f"unknown user {receipt.user_id}: nobody to send it to")
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
        if isinstance(err, UnrecoverableError):
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
        """Finish the jobs in hand, then stop (SIGTERM's graceful path)."""
        if self._task is not None and self.worker.running:
            await self.worker.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._redis.aclose()
        self._smtp.close()
