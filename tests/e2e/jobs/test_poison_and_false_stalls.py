"""A poison job (it kills every worker that takes it) is failed after maxStalledCount + 1
stalls, and the jobs beside it run once each; a handler that blocks the event loop past its
lock is stalled and run again by the other worker, one that blocks in a thread is not; a worker
without NOTIFY_DRILLS never obeys a drill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.scenarios.receipts.drills import POISON_EXIT_CODE
from grpc_resilience_mesh.chaos.scenarios.receipts.harness import count_events, job_events
from grpc_resilience_mesh.services.contracts.receipt_job import (
    DRILL_KEY,
    JOB_NAME,
    STALLED_REASON,
    ReceiptRetry,
    job_id_for,
)
from tests.e2e.jobs.jobs_helpers import enqueue, job, receipt, wait_state, worker_config
from tests.e2e.jobs.worker_procs import WorkerProcs
from tests.support.polling import await_until

LOCK_MS, INTERVAL_MS = 1000, 200


async def _enqueue_drill(queue: Any, drill: dict[str, Any], attempts: int = 5) -> str:
    r = receipt()
    job_id = job_id_for(r.charge_id)
    data = r.to_data() | {DRILL_KEY: drill}
    await queue.add(JOB_NAME, data, ReceiptRetry(attempts=attempts).job_options(job_id))
    return job_id


def _env(max_stalled: int) -> dict[str, str]:
    return {
        "NOTIFY_DRILLS": "1",
        "NOTIFY_CONCURRENCY": "1",
        "NOTIFY_LOCK_MS": str(LOCK_MS),
        "NOTIFY_STALLED_INTERVAL_MS": str(INTERVAL_MS),
        "NOTIFY_MAX_STALLED": str(max_stalled),
    }


@pytest.mark.parametrize("max_stalled", [1, 2])
async def test_a_poison_job_is_failed_after_max_stalled_plus_one_stalls(
    redis_server: Any, smtp_sink: Any, queue_name: str, queue: Any, max_stalled: int
) -> None:
    workers = WorkerProcs(redis_server.addr, smtp_sink.addr, queue_name, _env(max_stalled))
    await workers.start()
    try:
        poison = await _enqueue_drill(queue, {"exit": True})  # 5 attempts: stalls are not attempts
        others = [await enqueue(queue, receipt()) for _ in range(3)]

        async def poison_failed() -> bool:
            await workers.replace_dead()
            return str(await queue.getJobState(poison)) == "failed"

        await await_until(poison_failed, timeout_s=40, what="the poison job failed")
        for job_id in others:
            assert await wait_state(queue, job_id, timeout_s=20) == "completed"
        failed = await job(queue, poison)
        events = await job_events(redis_server.addr, queue_name)
        # the worker that failed it counts it as stalled, not as a permanent error
        sample = f'mesh_jobs_failed_total{{queue="{queue_name}",reason="stalled"}}'
        await await_until(lambda: workers.metric(sample), what="the stalled failure counted")
        assert await workers.metric(sample) == 1
    finally:
        await workers.stop()
    assert workers.deaths == [POISON_EXIT_CODE] * (max_stalled + 1)
    assert failed.failedReason == STALLED_REASON
    assert count_events(events, "stalled", poison) == max_stalled + 1
    # k+1 runs that killed their worker, and the pickup that failed it without running it
    assert count_events(events, "active", poison) == max_stalled + 2
    assert [count_events(events, "active", j) for j in others] == [1, 1, 1]
    sent = [m.charge_id for m in smtp_sink.mailbox.messages()]
    assert poison.removeprefix("receipt-") not in sent
    assert all(sent.count(j.removeprefix("receipt-")) == 1 for j in others)


@pytest.mark.parametrize("offload", [False, True], ids=["blocks-loop", "blocks-thread"])
async def test_a_handler_blocking_the_event_loop_past_its_lock_is_stalled_and_run_again(
    redis_server: Any, smtp_sink: Any, queue_name: str, queue: Any, offload: bool
) -> None:
    block_s = 2.5 * LOCK_MS / 1000
    workers = WorkerProcs(redis_server.addr, smtp_sink.addr, queue_name, _env(1))
    await workers.start()
    try:
        job_id = await _enqueue_drill(queue, {"block_s": block_s, "offload": offload}, 1)
        state = await wait_state(queue, job_id, timeout_s=30)
        events = await job_events(redis_server.addr, queue_name)
    finally:
        await workers.stop()
    picked = [e.t for e in events if e.event == "active" and e.job_id == job_id]
    if offload:  # the loop kept renewing the lock
        assert (state, len(picked), count_events(events, "stalled", job_id)) == ("completed", 1, 0)
    else:
        assert count_events(events, "stalled", job_id) >= 1
        assert len(picked) >= 2, "run again by the other worker while the first still ran it"
        # not before the lock expired; within two stall checks and one blocking read after
        assert LOCK_MS / 1000 - 0.05 <= picked[1] - picked[0] <= LOCK_MS / 1000 + 2.5
        assert state == "failed" and (await job(queue, job_id)).failedReason == STALLED_REASON
    assert workers.deaths == []


async def test_a_worker_without_drills_enabled_ignores_them(
    redis_server: Any,
    smtp_sink: Any,
    queue_name: str,
    queue: Any,
    run_worker: Callable[..., Any],
) -> None:
    run_worker(worker_config(redis_server.addr, smtp_sink.addr, queue_name))  # drills off
    job_id = await _enqueue_drill(queue, {"exit": True}, 1)
    assert await wait_state(queue, job_id) == "completed"  # the test process did not exit
    sent = [m.charge_id for m in smtp_sink.mailbox.messages()]
    assert sent.count(job_id.removeprefix("receipt-")) == 1
