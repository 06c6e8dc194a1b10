"""The worker-crash experiment: kill -9 a worker holding receipt jobs mid-send; another worker
recovers them once the locks expire; the mailbox gets exactly one receipt per charge.

Its steps, in order: hand the queue to a victim worker (earlier receipts drained, the mesh's
own worker stopped), hold SMTP so no message is accepted, check out until the victim holds
every job, kill it beside a rescuer, and read what the rescuer did.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bullmq import Queue
from redis.asyncio import Redis

from grpc_resilience_mesh.chaos.registry import ScenarioContext, ScenarioResult
from grpc_resilience_mesh.chaos.scenarios.params import WorkerCrashParams
from grpc_resilience_mesh.chaos.scenarios.receipts.harness import (
    JobsHarness,
    JobTimes,
    as_row,
    checkouts,
    harness_for,
)
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.services.contracts.receipt_job import QUEUE

SMTP_PROXY = "notification_to_smtp"
HOLD = "hold-smtp"


@dataclass(frozen=True)
class Crash:
    """What the crash left to measure: the charges checked out, when the victim was killed,
    when each job first started (BullMQ's processedOn, 0 if never) and how each finished."""

    charges: list[str]
    killed_at: float
    first_started: dict[str, float]
    done: list[JobTimes]


async def worker_crash(ctx: ScenarioContext) -> ScenarioResult:
    """kill -9 a worker holding jobs mid-send; another worker recovers them once the locks
    expire; the mailbox gets exactly one receipt per charge."""
    p = ctx.params_as(WorkerCrashParams)
    n, lock_ms = p.charges, p.lock_ms
    h = harness_for(ctx)
    assert ctx.target.toxiproxy is not None, "worker-crash needs Toxiproxy in front of SMTP"
    toxi = ToxiproxyClient(ctx.target.toxiproxy, token=ctx.target.admin_token)
    env = {
        "NOTIFY_LOCK_MS": str(lock_ms),
        "NOTIFY_CONCURRENCY": str(n),
        "NOTIFY_STALLED_INTERVAL_MS": str(p.stalled_interval_ms),
    }
    try:
        await _take_the_queue_from_the_mesh(ctx, h, n)
        await _hold_smtp(toxi, p.smtp_latency_ms)
        charges = await _victim_holding_every_job(ctx, h, env, n)
        crash = await _kill_the_victim(ctx, h, toxi, env, charges, lock_ms)
    finally:
        if "rescuer" in h.mesh.alive():
            await asyncio.to_thread(h.mesh.kill, "rescuer", signal.SIGTERM)
        await asyncio.to_thread(h.mesh.restart_service, "notification")
        await h.close()
    mails = Counter(m.charge_id for m in h.mailbox.messages() if m.charge_id in set(charges))
    return ScenarioResult(_figures(crash, mails), _rows(crash))


async def _take_the_queue_from_the_mesh(ctx: ScenarioContext, h: JobsHarness, n: int) -> None:
    """Only the victim may take the jobs: the mesh's own worker stops (restarted at the end)."""
    # Receipts of earlier experiments' checkouts may still be queued: let the mesh's own
    # worker send them first, or the victim would hold those instead of ours.
    ctx.progress(f"{ctx.variant.name}: draining earlier receipts", 0, n)
    await _drain(h.queue(QUEUE), timeout_s=60)
    await asyncio.to_thread(h.mesh.kill, "notification", signal.SIGTERM)
    # BullMQ lets one stalled-job scan run per interval, throttled by a key that the worker
    # which scanned last set for ITS interval (the mesh's: half of a 30 s lock). Clear it,
    # or the rescuer's 0.25 s scans wait out the stopped worker's throttle first.
    redis = Redis.from_url(f"redis://{h.redis}")
    try:
        await redis.delete(f"bull:{QUEUE}:stalled-check")
    finally:
        await redis.aclose()


async def _drain(queue: Queue, timeout_s: float) -> None:
    """Wait until no job is waiting, active or delayed (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        counts = await queue.getJobCounts("waiting", "active", "delayed")
        if not any(counts.values()):
            return
        await asyncio.sleep(0.1)


async def _hold_smtp(toxi: ToxiproxyClient, latency_ms: int) -> None:
    """Hold every SMTP command (3 s by default) so the kill lands before any message is
    accepted."""
    await asyncio.to_thread(
        toxi.add_toxic, SMTP_PROXY, "latency", "upstream", 1.0, {"latency": latency_ms}, HOLD
    )


async def _victim_holding_every_job(
    ctx: ScenarioContext, h: JobsHarness, env: dict[str, str], n: int
) -> list[str]:
    """The victim worker started and `n` checkouts made; returns their charges once the
    victim holds all `n` jobs (or after 10 s)."""
    await asyncio.to_thread(h.mesh.start_worker, "victim", env)
    charges = await checkouts(ctx.target.gateway, ctx.target.api_key, n)
    q = h.queue(QUEUE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if (await q.getJobCounts("active"))["active"] >= n:
            break
        await asyncio.sleep(0.02)
    return charges


async def _kill_the_victim(
    ctx: ScenarioContext,
    h: JobsHarness,
    toxi: ToxiproxyClient,
    env: dict[str, str],
    charges: list[str],
    lock_ms: int,
) -> Crash:
    """A rescuer started, the victim killed with SIGKILL, SMTP released; waits until the
    rescuer has finished every job."""
    n, ids = len(charges), [f"receipt-{c}" for c in charges]
    await asyncio.to_thread(h.mesh.start_worker, "rescuer", env)
    killed_at = time.time()
    await asyncio.to_thread(h.mesh.kill, "victim", signal.SIGKILL)
    ctx.progress(f"{ctx.variant.name}: worker killed, jobs being recovered", 0, n)
    await asyncio.to_thread(toxi.remove_toxic, SMTP_PROXY, HOLD)
    first_started = {j: (await h.times(QUEUE, j)).processed_on for j in ids}
    done = await h.wait_finished(QUEUE, ids, timeout_s=lock_ms / 1000 * 3 + 10)
    ctx.progress(f"{ctx.variant.name}: jobs recovered", n, n)
    return Crash(charges, killed_at, first_started, done)


def _figures(crash: Crash, mails: Counter[str]) -> dict[str, float]:
    """The experiment's metrics: completions, second runs, receipts, and how long after the
    kill (and after each job's first start) the last recovered job started again."""
    done, first_started = crash.done, crash.first_started
    recovered = [j.processed_on - crash.killed_at for j in done if j.state == "completed"]
    since_start = [j.processed_on - first_started[j.id] for j in done if first_started[j.id]]
    ran_twice = sum(
        1
        for j in done
        if j.attempts_started >= 2 or j.processed_on > first_started.get(j.id, j.processed_on)
    )
    return {
        "charges": len(crash.charges),
        "completed": sum(j.state == "completed" for j in done),
        "ran_twice": ran_twice,
        "receipts": sum(mails.values()),
        "duplicates": sum(c - 1 for c in mails.values()),
        "missing": sum(1 for c in crash.charges if mails[c] == 0),
        "recovered_after_kill_s": round(max(recovered), 3) if recovered else -1.0,
        "recovered_after_start_s": round(max(since_start), 3) if since_start else -1.0,
    }


def _rows(crash: Crash) -> list[dict[str, Any]]:
    """One row per job: its state, starts, and when it ran again."""
    return [
        as_row(
            job=j.id,
            state=j.state,
            attempts_started=j.attempts_started,
            rerun_after_s=round(j.processed_on - crash.first_started[j.id], 3),
            after_kill_s=round(j.processed_on - crash.killed_at, 3),
        )
        for j in crash.done
    ]
