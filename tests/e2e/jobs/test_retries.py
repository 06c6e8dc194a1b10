"""Transient SMTP failures are retried on the configured schedule; permanent ones and bad
payloads fail at once, with a reason a person can act on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from grpc_resilience_mesh.services.contracts.receipt_job import JOB_NAME, ReceiptRetry
from tests.e2e.jobs.jobs_helpers import enqueue, job, receipt, wait_state


@pytest.fixture
async def worker(
    redis_server: Any, smtp_sink: Any, queue_name: str, run_worker: Callable[..., Any]
) -> Any:
    from tests.e2e.jobs.jobs_helpers import worker_config

    return run_worker(worker_config(redis_server.addr, smtp_sink.addr, queue_name))


async def test_421_twice_is_retried_on_the_backoff_schedule(
    queue: Any, worker: Any, smtp_sink: Any
) -> None:
    r = receipt()
    smtp_sink.mailbox.set_script([{"code": 421, "times": 2, "match": r.charge_id}])
    policy = ReceiptRetry(attempts=4, backoff_s=0.1, jitter=0.0)
    job_id = await enqueue(queue, r, policy)
    assert await wait_state(queue, job_id) == "completed"
    assert (await job(queue, job_id)).attemptsMade == 3
    seen = [a["t"] for a in smtp_sink.mailbox.attempts() if a["charge_id"] == r.charge_id]
    codes = [a["code"] for a in smtp_sink.mailbox.attempts() if a["charge_id"] == r.charge_id]
    assert codes == [421, 421, 250]
    offsets = [t - seen[0] for t in seen]
    for measured, computed in zip(offsets, policy.schedule_s(), strict=False):  # 0, 0.1, 0.3
        assert computed - 0.01 <= measured <= computed + 0.15, (offsets, policy.schedule_s())
    assert [m.charge_id for m in smtp_sink.mailbox.messages()].count(r.charge_id) == 1


async def test_550_fails_at_once_with_one_attempt(queue: Any, worker: Any, smtp_sink: Any) -> None:
    r = receipt()
    smtp_sink.mailbox.set_script([{"code": 550, "match": r.charge_id}])
    job_id = await enqueue(queue, r, ReceiptRetry(attempts=5, backoff_s=0.1, jitter=0.0))
    assert await wait_state(queue, job_id) == "failed"
    failed = await job(queue, job_id)
    assert failed.attemptsMade == 1
    assert "550" in failed.failedReason


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            {"charge_id": "ch_x", "amount_cents": 5, "currency": "USD", "created_at": 1.0},
            "bad payload: user_id: required",
        ),
        (
            {
                "charge_id": "ch_x",
                "user_id": "u-0001",
                "amount_cents": "5",
                "currency": "USD",
                "created_at": 1.0,
            },
            "bad payload: amount_cents",
        ),
        (
            {
                "charge_id": "ch_x",
                "user_id": "u-0001",
                "amount_cents": -5,
                "currency": "USD",
                "created_at": 1.0,
            },
            "amount_cents: -5 must be > 0",
        ),
        (
            {
                "charge_id": "ch_x",
                "user_id": "u-9999",
                "amount_cents": 5,
                "currency": "USD",
                "created_at": 1.0,
            },
            "unknown user u-9999",
        ),
        (["not", "an", "object"], "bad payload: job data is list"),
    ],
)
async def test_bad_payload_fails_permanently_with_a_clear_reason(
    queue: Any, worker: Any, data: Any, reason: str
) -> None:
    await queue.add(JOB_NAME, data, ReceiptRetry(attempts=5, backoff_s=0.1).job_options("bad-1"))
    assert await wait_state(queue, "bad-1") == "failed"
    failed = await job(queue, "bad-1")
    assert failed.attemptsMade == 1, "a bad payload is not retried"
    assert reason in failed.failedReason
