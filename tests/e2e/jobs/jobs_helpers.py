"""Enqueue receipts, wait for jobs, start redis and workers: what the job tests share."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bullmq import Job, Queue

from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.launch.redis_server import redis_args, wait_ping
from grpc_resilience_mesh.services.contracts.receipt_job import (
    JOB_NAME,
    Receipt,
    ReceiptRetry,
    job_id_for,
)
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from tests.support.polling import await_until


def receipt(user_id: str = "u-0001") -> Receipt:
    return Receipt(f"ch_t_{uuid.uuid4().hex[:16]}", user_id, 1250, "USD", time.time())


async def enqueue(queue: Queue, r: Receipt, policy: ReceiptRetry | None = None) -> str:
    job_id = job_id_for(r.charge_id)
    await queue.add(JOB_NAME, r.to_data(), (policy or ReceiptRetry(attempts=1)).job_options(job_id))
    return job_id


async def wait_state(
    queue: Queue,
    job_id: str,
    states: tuple[str, ...] = ("completed", "failed"),
    timeout_s: float = 15.0,
) -> str:

    async def reached() -> str:
        state = str(await queue.getJobState(job_id))
        return state if state in states else ""

    return await await_until(reached, timeout_s, f"{job_id} in {'/'.join(states)}", 0.02)


async def job(queue: Queue, job_id: str) -> Any:
    found: Job | None = await queue.getJob(job_id)
    assert found is not None, job_id
    return found


@dataclass
class RedisProc:
    addr: str
    port: int
    popen: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.popen.terminate()
        self.popen.wait(10)


def start_redis(port: int, data_dir: Path) -> RedisProc:
    popen = subprocess.Popen(
        redis_args(port, data_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    addr = f"127.0.0.1:{port}"
    if not wait_ping(addr, 10):
        popen.kill()
        raise RuntimeError(f"redis-server did not start on {addr}")
    return RedisProc(addr, port, popen)


def worker_config(redis: str, smtp: str, queue: str, **overrides: object) -> NotificationConfig:
    base = dict(
        redis_addr=redis,
        smtp_addr=smtp,
        queue=queue,
        concurrency=1,
        rate_max=0,
        rate_duration_ms=1000,
        lock_ms=5000,
        stalled_interval_ms=250,
        max_stalled=1,
        smtp_timeout_s=5.0,
        sender="receipts@test",
        sent_ttl_s=600.0,
    )
    base.update(overrides)
    return NotificationConfig(**base)  # type: ignore[arg-type]


def worker_process_env(redis: str, smtp: str, queue: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "LISTEN_ADDR": f"127.0.0.1:{free_port()}",
        "ADMIN_ADDR": f"127.0.0.1:{free_port()}",
        "METRICS_ADDR": f"127.0.0.1:{free_port()}",
        "REDIS_ADDR": redis,
        "SMTP_ADDR": smtp,
        "NOTIFY_QUEUE": queue,
        **extra,
    }
