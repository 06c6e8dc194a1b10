"""A delayed job (a receipt's backoff) runs when it is due, even when the worker is idle in its
blocking read for the next job, and even when that read's reply is lost on the way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.embedded_toxiproxy.server import ToxiproxyServer
from grpc_resilience_mesh.services.contracts.receipt_job import JOB_NAME, ReceiptRetry, job_id_for
from tests.e2e.jobs.jobs_helpers import job, receipt, wait_state, worker_config
from tests.support.polling import await_until

DELAY_MS = 1000


async def _blocked_in_bzpopmin(redis_addr: str, queue_name: str, timeout_s: float = 10) -> None:
    """Until the worker's blocking connection waits in BZPOPMIN on the queue's marker."""
    client = Redis.from_url(f"redis://{redis_addr}", decode_responses=True)

    async def blocked() -> bool:
        clients = await client.client_list()
        return any(c.get("cmd") == "bzpopmin" and "b" in c.get("flags", "") for c in clients)

    try:
        await await_until(blocked, timeout_s, "the worker blocked waiting for a job", 0.05)
    finally:
        await client.aclose()


async def _add_delayed(queue: Any, delay_ms: int = DELAY_MS) -> tuple[str, float]:
    """A receipt job due `delay_ms` from now; (its id, when it is due in epoch seconds)."""
    r = receipt()
    job_id = job_id_for(r.charge_id)
    opts = {**ReceiptRetry(attempts=1).job_options(job_id), "delay": delay_ms}
    await queue.add(JOB_NAME, r.to_data(), opts)
    added = await job(queue, job_id)
    return job_id, (added.timestamp + delay_ms) / 1000


async def _lateness_s(queue: Any, job_id: str, due_s: float, timeout_s: float) -> float:
    """How long after it was due the job started (waits for it to complete)."""
    assert await wait_state(queue, job_id, timeout_s=timeout_s) == "completed"
    return float((await job(queue, job_id)).processedOn) / 1000 - due_s


async def test_a_delayed_job_runs_on_time_while_the_worker_is_blocked(
    redis_server: Any, smtp_sink: Any, queue_name: str, queue: Any, run_worker: Callable[..., Any]
) -> None:
    run_worker(worker_config(redis_server.addr, smtp_sink.addr, queue_name))
    await _blocked_in_bzpopmin(redis_server.addr, queue_name)
    job_id, due_s = await _add_delayed(queue)
    lateness_s = await _lateness_s(queue, job_id, due_s, timeout_s=15)
    assert -0.05 <= lateness_s <= 0.5, f"ran {lateness_s:.3f} s after it was due"


async def test_a_job_due_later_than_a_socket_timeout_is_not_held_by_retried_reads(
    redis_server: Any, smtp_sink: Any, queue_name: str, queue: Any, run_worker: Callable[..., Any]
) -> None:
    """The worker learns the job is due in 7 s and blocks until then. redis-py cuts any read
    at its default 5 s socket timeout, and its retries (20, backing off up to 20 s) re-sent
    the same 7 s read for minutes: the job waited until they gave up."""
    run_worker(worker_config(redis_server.addr, smtp_sink.addr, queue_name))
    await _blocked_in_bzpopmin(redis_server.addr, queue_name)
    job_id, due_s = await _add_delayed(queue, delay_ms=7000)
    lateness_s = await _lateness_s(queue, job_id, due_s, timeout_s=40)
    assert -0.05 <= lateness_s <= 0.5, f"ran {lateness_s:.3f} s after it was due"


async def test_a_delayed_job_runs_soon_after_its_wake_up_was_lost_in_transit(
    redis_server: Any, smtp_sink: Any, queue_name: str, queue: Any, run_worker: Callable[..., Any]
) -> None:
    """The blocked read pops the job's marker, but the reply is dropped (a timeout toxic on
    the worker's path to Redis, removed 0.5 s later, closing the connection as Toxiproxy does):
    the worker must find the job anyway, soon after it is due."""
    async with ToxiproxyServer("127.0.0.1", 0) as proxy_server:
        toxi = ToxiproxyClient(proxy_server.base_url)
        made = await asyncio.to_thread(toxi.create_proxy, "redis", "127.0.0.1:0", redis_server.addr)
        via_proxy = str(made["listen"])
        worker = run_worker(worker_config(via_proxy, smtp_sink.addr, queue_name))
        await _blocked_in_bzpopmin(redis_server.addr, queue_name)
        await asyncio.to_thread(
            toxi.add_toxic, "redis", "timeout", "downstream", 1.0, {"timeout": 0}, "blackhole"
        )
        job_id, due_s = await _add_delayed(queue)  # straight to Redis: the marker is popped
        await asyncio.sleep(0.5)
        await asyncio.to_thread(toxi.remove_toxic, "redis", "blackhole")
        lateness_s = await _lateness_s(queue, job_id, due_s, timeout_s=30)
        # Closed while its proxy still listens: the fixture's close, after the proxy had gone,
        # reached Redis through a dead address, retried past the test's timeout, and left
        # bullmq's close spinning on its cancelled teardown when the loop shut down (a CI
        # worker hung there for minutes).
        await worker.close()
    assert lateness_s <= 2.5, f"ran {lateness_s:.3f} s after it was due"
