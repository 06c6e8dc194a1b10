"""One CONSUMER span per job attempt, continuing the trace context the job carries.

    Recv.mesh.v1.PaymentService/Charge    (payment: the charge that committed the receipt job)
    └── process receipts                  CONSUMER, one per attempt of the job
        events: receipt sent | already sent | retry scheduled | job failed

Attributes follow OpenTelemetry's messaging conventions (`messaging.*`) plus `mesh.job.attempt`
(1-based), `mesh.job.attempts` (the job's allowance) and `mesh.charge_id`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace

from grpc_resilience_mesh.services.telemetry import names as n

EV_SENT = "receipt sent"
EV_ALREADY_SENT = "already sent"
EV_JOB_FAILED = "job failed"


def attempt_of(job: Any) -> tuple[int, int]:
    """(this attempt, attempts allowed): BullMQ counts attempts made before this one."""
    return int(job.attemptsMade or 0) + 1, int((job.opts or {}).get("attempts") or 1)


@contextmanager
def attempt_span(tracer: trace.Tracer, queue: str, job: Any) -> Iterator[trace.Span]:
    """The span of one attempt, child of the trace context in `job.data["trace"]` if any."""
    data = job.data if isinstance(job.data, dict) else {}
    carrier = data.get("trace")
    parent = propagate.extract(carrier if isinstance(carrier, dict) else {})
    attempt, attempts = attempt_of(job)
    with tracer.start_as_current_span(
        f"process {queue}",
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        attributes={
            "messaging.system": "bullmq",
            "messaging.operation.type": "process",
            "messaging.destination.name": queue,
            "messaging.message.id": str(job.id),
            "mesh.job.attempt": attempt,
            "mesh.job.attempts": attempts,
            "mesh.charge_id": str(data.get("charge_id", "")),
        },
    ) as span:
        yield span


def retry_scheduled(span: trace.Span, attempt: int, err: BaseException, delay_ms: int) -> None:
    span.add_event(
        n.EV_RETRY_SCHEDULED,
        {n.ATTEMPT: attempt, n.REASON: _reason(err), n.DELAY_S: delay_ms / 1000},
    )


def job_failed(span: trace.Span, attempt: int, err: BaseException, why: str) -> None:
    """`why`: permanent (not worth retrying) or exhausted (no attempt left)."""
    span.add_event(EV_JOB_FAILED, {n.ATTEMPT: attempt, n.REASON: why, "mesh.error": _reason(err)})


def _reason(err: BaseException) -> str:
    return str(err) or type(err).__name__
