"""Finished receipt jobs are removed by count (BullMQ's removeOnComplete / removeOnFail), so
the queue's Redis stays bounded however many receipts go through it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from redis.asyncio import Redis

from grpc_resilience_mesh.services.contracts.receipt_job import (
    JOB_NAME,
    QUEUE,
    ReceiptRetention,
    ReceiptRetry,
    job_id_for,
)
from grpc_resilience_mesh.services.payment.ledger import Ledger
from grpc_resilience_mesh.services.payment.outbox import relay_from_env
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics
from tests.e2e.jobs.jobs_helpers import job, receipt, wait_state, worker_config

KEEP = ReceiptRetention(completed_count=5, failed_count=3)


async def _add(queue: Any, user_id: str) -> str:
    r = receipt(user_id)
    job_id = job_id_for(r.charge_id)
    await queue.add(JOB_NAME, r.to_data(), ReceiptRetry(attempts=1).job_options(job_id, KEEP))
    return job_id


async def _queue_keys(addr: str, queue_name: str) -> int:
    client = Redis.from_url(f"redis://{addr}")
    try:
        return len([k async for k in client.scan_iter(f"bull:{queue_name}:*", count=1000)])
    finally:
        await client.aclose()


async def test_finished_jobs_are_kept_up_to_their_counts_and_redis_stays_bounded(
    redis_server: Any,
    smtp_sink: Any,
    queue_name: str,
    queue: Any,
    run_worker: Callable[..., Any],
) -> None:
    run_worker(worker_config(redis_server.addr, smtp_sink.addr, queue_name, concurrency=4))
    keys_after = []
    for _ in range(3):  # three rounds of 10 receipts and 4 that fail for good (unknown user)
        ids = [await _add(queue, "u-0001") for _ in range(10)]
        failing = [await _add(queue, "u-9999") for _ in range(4)]
        for job_id in ids:  # a kept job is completed; one removed already is unknown
            await wait_state(queue, job_id, ("completed", "unknown"))
        for job_id in failing:
            await wait_state(queue, job_id, ("failed", "unknown"))
        counts = await queue.getJobCounts("completed", "failed")
        assert counts == {"completed": KEEP.completed_count, "failed": KEEP.failed_count}
        keys_after.append(await _queue_keys(redis_server.addr, queue_name))
    # 42 jobs went through; the queue's keys do not grow with them: a hash per kept job and
    # at most ten of the queue's own (id, meta, events, completed, failed, stalled-check, ...)
    assert max(keys_after) <= KEEP.completed_count + KEEP.failed_count + 10, keys_after
    newest = await queue.getJobs(["completed"], 0, -1)
    assert {j.id for j in newest} <= set(ids), "the newest completed jobs are the ones kept"


async def test_payments_relay_enqueues_with_the_retention_its_environment_sets(
    tmp_path: Path, redis_server: Any, queue_name: str, queue: Any
) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    env = {
        "RECEIPT_QUEUE": queue_name,
        "RECEIPT_KEEP_COMPLETED": "7",
        "RECEIPT_KEEP_FAILED_S": "60",
    }
    relay = relay_from_env(ledger, redis_server.addr, JobMetrics(CollectorRegistry(), QUEUE), env)
    try:
        record, _ = await ledger.charge("keep-key-1", "u-0002", 4200, "USD", "")
        assert await relay.relay_once() == 1
        opts = (await job(queue, job_id_for(record.charge_id))).opts
    finally:
        await relay.close()
        await ledger.close()
    assert opts["removeOnComplete"] == {"age": ReceiptRetention.completed_age_s, "count": 7}
    assert opts["removeOnFail"] == {"age": 60, "count": ReceiptRetention.failed_count}
