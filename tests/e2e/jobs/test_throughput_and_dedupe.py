"""Concurrency is per worker, a limiter is per queue; one job id is one job, one receipt."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from grpc_resilience_mesh.services.contracts.receipt_job import ReceiptRetry
from tests.e2e.jobs.jobs_helpers import enqueue, job, receipt, wait_state, worker_config
from tests.support.polling import await_until


async def _drain(queue: Any, n: int) -> float:
    # The worker is already running, so the clock starts before the first enqueue: a job can
    # start only once enqueued, and the lower bounds below are then hard.
    started = time.monotonic()
    ids = [await enqueue(queue, receipt()) for _ in range(n)]
    for job_id in ids:
        assert await wait_state(queue, job_id, timeout_s=20) == "completed"
    return time.monotonic() - started


@pytest.mark.parametrize(
    ("concurrency", "rate_max", "low_s", "high_s"),
    [(1, 0, 1.0, 3.0), (10, 0, 0.0, 0.8), (10, 10, 1.0, 2.5)],
    ids=["concurrency-1", "concurrency-10", "concurrency-10-limit-10ps"],
)
async def test_concurrency_and_limiter_set_the_pace(
    queue: Any,
    queue_name: str,
    redis_server: Any,
    smtp_sink: Any,
    run_worker: Callable[..., Any],
    concurrency: int,
    rate_max: int,
    low_s: float,
    high_s: float,
) -> None:
    """20 jobs of 50 ms: theory 1.0 s, 0.1 s, and 1.05 s (the 20th starts in the 3rd window)."""
    smtp_sink.mailbox.set_script([{"delay_s": 0.05, "match": "ch_t_"}])
    run_worker(
        worker_config(
            redis_server.addr,
            smtp_sink.addr,
            queue_name,
            concurrency=concurrency,
            rate_max=rate_max,
        )
    )
    elapsed = await _drain(queue, 20)
    assert low_s <= elapsed <= high_s


async def test_same_job_id_twice_is_one_job_and_one_receipt(
    queue: Any,
    queue_name: str,
    redis_server: Any,
    smtp_sink: Any,
    run_worker: Callable[..., Any],
) -> None:
    r = receipt()
    first = await enqueue(queue, r, ReceiptRetry(attempts=3))
    second = await enqueue(queue, r, ReceiptRetry(attempts=3))
    assert first == second == f"receipt-{r.charge_id}"
    assert sum((await queue.getJobCounts("waiting")).values()) == 1
    worker = run_worker(worker_config(redis_server.addr, smtp_sink.addr, queue_name))
    assert await wait_state(queue, first) == "completed"
    await enqueue(queue, r)  # after completion too: the id is taken while the job is kept
    # A duplicate would have been queued before this sentinel: once the sentinel is mailed and
    # nothing waits or runs, the duplicate has had every chance to arrive.
    sentinel = receipt()
    sentinel_id = await enqueue(queue, sentinel)
    assert await wait_state(queue, sentinel_id) == "completed"
    await await_until(
        lambda: _idle(queue),
        what="the queue is idle after the sentinel",
        timeout_s=10,
    )
    await await_until(lambda: sentinel.charge_id in _mailed(smtp_sink), what="sentinel mailed")
    assert (await job(queue, first)).attemptsMade == 1
    assert _mailed(smtp_sink).count(r.charge_id) == 1

    # A job that runs again (e.g. retried by hand) finds its receipt sent: no second mail.
    await (await job(queue, first)).retry("completed")
    assert await wait_state(queue, first) == "completed"
    # The run's outcome is counted as a duplicate once it has finished: wait for that count.
    dupes = worker.metrics._dupes.labels(queue_name)._value
    await await_until(lambda: dupes.get() >= 1, what="the rerun counted as a duplicate")
    assert _mailed(smtp_sink).count(r.charge_id) == 1
    assert dupes.get() == 1


def _mailed(smtp_sink: Any) -> list[str]:
    return [m.charge_id for m in smtp_sink.mailbox.messages()]


async def _idle(queue: Any) -> bool:
    counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized")
    return bool(sum(counts.values()) == 0)
