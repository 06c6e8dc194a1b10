"""The stalled-job experiments (seed 004): poison-job and false-stall.

Both run on a queue of their own with workers of their own (drill workers started with
NOTIFY_DRILLS=1, so they obey the jobs' test-only drills, drills.py) and read what happened from
BullMQ's own records: its event stream (`active` each time a worker takes a job, `stalled` each
time a stalled-job check finds the job's lock gone) and the finished job's state and reason.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from grpc_resilience_mesh.chaos.registry import ScenarioContext, ScenarioResult
from grpc_resilience_mesh.chaos.scenarios.params import (
    FalseStallParams,
    PoisonJobParams,
    StallParams,
)
from grpc_resilience_mesh.chaos.scenarios.receipts.drills import DRILL_WORKER
from grpc_resilience_mesh.chaos.scenarios.receipts.harness import (
    JobEvent,
    JobsHarness,
    JobTimes,
    as_row,
    count_events,
    harness_for,
    receipt,
)
from grpc_resilience_mesh.client.queue_admin import JobView, QueueAdmin
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.services.contracts.receipt_job import STALLED_REASON, ReceiptRetry

RUN_SENDS_S = 0.5
"""After a run's drill has blocked, what its send may take (the SMTP peer answers in ms)."""
MAX_STARTS = 30
"""More worker starts than any variant needs (k+1 deaths plus the pool): a bound, not a wait."""


@dataclass
class WorkerPool:
    """`size` receipt workers on one queue; one that dies is replaced (a supervisor's restart),
    and its death counted."""

    h: JobsHarness
    prefix: str
    env: dict[str, str]
    size: int
    live: list[str] = field(default_factory=list)
    deaths: int = 0
    started: int = 0

    async def start(self) -> None:
        """Start workers until `size` are live, those missing side by side (a start is mostly
        the new process's imports: ~1 s each, one after the other, at every pool's start)."""
        while len(self.live) < self.size:
            if self.started >= MAX_STARTS:
                raise RuntimeError(f"{self.prefix}: {self.started} workers started, giving up")
            wanted = min(self.size - len(self.live), MAX_STARTS - self.started)
            names = [f"{self.prefix}-{self.started + i + 1}" for i in range(wanted)]
            self.started += wanted
            for name in await asyncio.gather(*(self._start_one(n) for n in names)):
                if name is None:
                    # A poison job waiting in the queue can kill a worker before it is ready.
                    self.deaths += 1
                else:
                    self.live.append(name)

    async def _start_one(self, name: str) -> str | None:
        try:
            await asyncio.to_thread(self.h.mesh.start_worker, name, self.env, DRILL_WORKER)
        except LaunchError:
            return None
        return name

    async def replace_dead(self) -> None:
        alive = set(self.h.mesh.alive())
        dead = [n for n in self.live if n not in alive]
        for name in dead:
            self.live.remove(name)
            self.deaths += 1
        if dead:
            await self.start()

    async def stop(self) -> None:
        """SIGTERM every live worker, side by side (one whose loop a drill blocks answers
        only when it wakes), and wait for each."""
        alive = set(self.h.mesh.alive())
        await asyncio.gather(
            *(
                asyncio.to_thread(self.h.mesh.kill, name, signal.SIGTERM)
                for name in self.live
                if name in alive
            )
        )


def _worker_env(queue: str, p: StallParams) -> dict[str, str]:
    return {
        "NOTIFY_QUEUE": queue,
        "NOTIFY_DRILLS": "1",
        "NOTIFY_CONCURRENCY": "1",
        "NOTIFY_LOCK_MS": str(p.lock_ms),
        "NOTIFY_STALLED_INTERVAL_MS": str(p.stalled_interval_ms),
        "NOTIFY_MAX_STALLED": str(p.max_stalled),
    }


def _times(events: list[JobEvent], kind: str, job_id: str) -> list[float]:
    return [e.t for e in events if e.event == kind and e.job_id == job_id]


def _pickups_that_ran(picked: list[float], job: JobTimes) -> list[float]:
    """The pickups whose handler ran: all but the last of a job failed as stalled, which BullMQ
    fails as it takes it, running nothing (poison-job counts k+2 pickups and k+1 deaths). Waiting
    out a run from that pickup kept false-stall's blocks-loop 1.6 s past its last real run."""
    if picked and job.state == "failed" and job.failed_reason == STALLED_REASON:
        return picked[:-1]
    return picked


@dataclass(frozen=True)
class PoisonRun:
    """What a poison-job run left to measure: the poison job and the others, BullMQ's events,
    the poison job as `mesh jobs` shows it, how the others finished, and the workers that died."""

    poison: str
    others: list[str]
    events: list[JobEvent]
    view: JobView | None
    done: list[JobTimes]
    deaths: int


async def poison_job(ctx: ScenarioContext) -> ScenarioResult:
    """One receipt whose job kills its worker each time it is taken, among `jobs` ordinary
    ones, on `workers` workers that are restarted when they die: BullMQ fails it after
    max_stalled + 1 stalls; the others complete once each."""
    p = ctx.params_as(PoisonJobParams)
    n, k = p.jobs, p.max_stalled
    h = harness_for(ctx)
    queue = f"poison-{ctx.variant.name}-{uuid.uuid4().hex[:8]}"
    pool = WorkerPool(h, f"w-{queue}", _worker_env(queue, p), p.workers)
    admin = QueueAdmin(h.redis, queue)
    timeout_s = p.timeout_s
    try:
        await pool.start()
        poison, others = await _poison_among_receipts(h, queue, n)
        ctx.progress(f"{ctx.variant.name}: poison job among {n} receipts", 0, n + 1)
        await _run_until_finished(ctx, pool, queue, [poison, *others], timeout_s)
        events = await h.events(queue)
        view = await admin.show(poison)
        done = await h.wait_finished(queue, others, timeout_s=0)
    finally:
        await pool.stop()
        await admin.close()
        await h.close()
    run = PoisonRun(poison, others, events, view, done, pool.deaths)
    metrics = _poison_figures(run, k, Counter(m.charge_id for m in h.mailbox.messages()))
    return ScenarioResult(metrics, _poison_rows(run, metrics))


async def _poison_among_receipts(h: JobsHarness, queue: str, n: int) -> tuple[str, list[str]]:
    """The poison job enqueued, then `n` ordinary receipts; their job ids."""
    # Five attempts, as every receipt has: stalls are not attempts, and a job that kills
    # its worker is failed by the stall count, whatever attempts remain.
    poison = await h.enqueue(queue, receipt("poison"), ReceiptRetry(), {"exit": True})
    others = [
        await h.enqueue(queue, receipt("bystander"), ReceiptRetry(attempts=1)) for _ in range(n)
    ]
    return poison, others


async def _run_until_finished(
    ctx: ScenarioContext, pool: WorkerPool, queue: str, ids: list[str], timeout_s: float
) -> None:
    """Until every job has completed or failed (or `timeout_s`), replacing the workers that
    die."""
    q = pool.h.queue(queue)
    deadline = time.monotonic() + timeout_s
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        await pool.replace_dead()
        for job_id in list(pending):
            if await q.getJobState(job_id) in ("completed", "failed"):
                pending.discard(job_id)
        ctx.progress(f"{ctx.variant.name}: jobs finished", len(ids) - len(pending), len(ids))
        await asyncio.sleep(0.05)
    await pool.replace_dead()  # a death at the very end still counts


def _poison_figures(run: PoisonRun, max_stalled: int, mails: Counter[str]) -> dict[str, float]:
    """The poison job's runs, pick-ups, stalls and failure; the others' completions, pick-ups
    and receipts."""
    view, events, poison = run.view, run.events, run.poison
    other_charges = [j.removeprefix("receipt-") for j in run.others]
    picked = _times(events, "active", poison)
    finished = (view.finished_on or 0) / 1000 if view else 0.0
    failed = view is not None and view.state == "failed"
    return {
        "max_stalled": max_stalled,
        "poison_runs": run.deaths,
        "poison_pickups": len(picked),
        "poison_stalls": count_events(events, "stalled", poison),
        "poison_failed": float(failed),
        "reason_readable": float(
            failed and view is not None and view.failed_reason == STALLED_REASON
        ),
        "poison_receipts": mails[poison.removeprefix("receipt-")],
        "failed_after_s": round(finished - picked[0], 3) if failed and picked else -1.0,
        "others": len(run.others),
        "others_completed": sum(j.state == "completed" for j in run.done),
        "others_pickups": sum(count_events(events, "active", j) for j in run.others),
        "others_receipts": sum(mails[c] for c in other_charges),
        "others_duplicates": sum(max(mails[c] - 1, 0) for c in other_charges),
    }


def _poison_rows(run: PoisonRun, metrics: dict[str, float]) -> list[dict[str, Any]]:
    """A row for the poison job (when each pick-up came, why it failed) and one for the rest."""
    view = run.view
    picked = _times(run.events, "active", run.poison)
    return [
        as_row(
            job=run.poison,
            state=view.state if view else "gone",
            worker_deaths=run.deaths,
            picked_up=len(picked),
            stalled=metrics["poison_stalls"],
            picked_at_s=[round(t - picked[0], 3) for t in picked],
            reason=(view.failed_reason if view else "") or "-",
        ),
        as_row(
            job=f"{len(run.others)} others",
            state=f"{metrics['others_completed']:g} completed",
            picked_up=metrics["others_pickups"],
            receipts=metrics["others_receipts"],
        ),
    ]


async def false_stall(ctx: ScenarioContext) -> ScenarioResult:
    """One receipt whose handler blocks for `block_s`, longer than the lock, on the event loop
    (or in a thread with `offload`), on `workers` healthy workers: nothing dies, yet a blocked
    loop cannot renew the lock, so BullMQ takes the job for stalled and runs it again."""
    p = ctx.params_as(FalseStallParams)
    lock_ms, block_s = p.lock_ms, p.block_s
    h = harness_for(ctx)
    queue = f"falsestall-{ctx.variant.name}-{uuid.uuid4().hex[:8]}"
    pool = WorkerPool(h, f"w-{queue}", _worker_env(queue, p), p.workers)
    admin = QueueAdmin(h.redis, queue)
    drill = {"block_s": block_s, "offload": p.offload}
    try:
        await pool.start()
        r = receipt("block")
        job_id = await h.enqueue(queue, r, ReceiptRetry(attempts=1), drill)
        ctx.progress(f"{ctx.variant.name}: a handler blocking {block_s:g} s", 0, 1)
        (job,) = await h.wait_finished(queue, [job_id], timeout_s=p.timeout_s)
        # The first handler may still be blocked when BullMQ has finished the job: let every
        # run end (each blocks block_s after its pickup, then sends) before reading the mailbox.
        ran = _pickups_that_ran(_times(await h.events(queue), "active", job_id), job)
        last_run_ends = max(ran, default=time.time()) + block_s + RUN_SENDS_S
        await asyncio.sleep(max(0.0, last_run_ends - time.time()))
        ctx.progress(f"{ctx.variant.name}: finished", 1, 1)
        events = await h.events(queue)
        view = await admin.show(job_id)
    finally:
        await pool.stop()
        await admin.close()
        await h.close()
    picked = _times(events, "active", job_id)
    receipts = sum(1 for m in h.mailbox.messages() if m.charge_id == r.charge_id)
    state = view.state if view else "gone"
    reason = view.failed_reason if view else ""
    metrics = {
        "block_ms": round(block_s * 1000),
        "lock_ms": lock_ms,
        "pickups": len(picked),
        "stalls": count_events(events, "stalled", job_id),
        "rerun_after_s": round(picked[1] - picked[0], 3) if len(picked) > 1 else -1.0,
        "completed": float(state == "completed"),
        "failed_stalled": float(state == "failed" and reason == STALLED_REASON),
        "receipts": receipts,
    }
    row = as_row(
        job=job_id,
        handler="blocks in a thread" if drill["offload"] else "blocks the event loop",
        state=state,
        picked_at_s=[round(t - picked[0], 3) for t in picked],
        stalled=metrics["stalls"],
        receipts=receipts,
        reason=reason or "-",
    )
    return ScenarioResult(metrics, [row])
