"""Enqueue receipts and wait for jobs, as the tests need."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from bullmq import Job, Queue

from mesh.notification.receipt import JOB_NAME, Receipt, RetryPolicy, job_id_for


def receipt(user_id: str = "u-0001") -> Receipt:
    return Receipt(f"ch_t_{uuid.uuid4().hex[:16]}", user_id, 1250, "USD", time.time())


async def enqueue(queue: Queue, r: Receipt, policy: RetryPolicy | None = None) -> str:
    job_id = job_id_for(r.charge_id)
    await queue.add(JOB_NAME, r.to_data(), (policy or RetryPolicy(attempts=1)).job_options(job_id))
    return job_id


async def wait_state(queue: Queue, job_id: str, states: tuple[str, ...] = ("completed", "failed"),
                     timeout_s: float = 15.0) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        state = str(await queue.getJobState(job_id))
        if state in states:
            return state
        assert time.monotonic() < deadline, f"{job_id} still {state} after {timeout_s} s"
        await asyncio.sleep(0.02)


async def job(queue: Queue, job_id: str) -> Any:
    found: Job | None = await queue.getJob(job_id)
    assert found is not None, job_id
    return found
