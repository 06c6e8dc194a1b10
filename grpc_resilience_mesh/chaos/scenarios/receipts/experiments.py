"""The background-job experiments: receipt-backoff, receipt-throughput and duplicate-enqueue
(worker-crash has a module of its own, worker_crash.py). Each is a scenario
(grpc_resilience_mesh/chaos/registry.py) run against the embedded mesh."""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
from collections.abc import Mapping
from typing import Any

from grpc_resilience_mesh.chaos.registry import ScenarioContext, ScenarioResult
from grpc_resilience_mesh.chaos.scenarios.params import (
    DuplicateEnqueueParams,
    ReceiptBackoffParams,
    ReceiptThroughputParams,
)
from grpc_resilience_mesh.chaos.scenarios.receipts.harness import (
    JobsHarness,
    JobTimes,
    as_row,
    checkouts,
    harness_for,
    ms,
    receipt,
)
from grpc_resilience_mesh.services.contracts.receipt_job import QUEUE, ReceiptRetry


def _attempt_times(h: JobsHarness, charge_id: str) -> list[float]:
    """When the SMTP server saw each attempt, relative to the first."""
    times = [a["t"] for a in h.mailbox.attempts() if a["charge_id"] == charge_id]
    return [t - times[0] for t in times] if times else []


async def receipt_backoff(ctx: ScenarioContext) -> ScenarioResult:
    """SMTP refuses by script; the attempts' times are compared with the configured schedule."""
    p = ctx.params_as(ReceiptBackoffParams)
    policy = ReceiptRetry(attempts=p.attempts, backoff_s=p.backoff_s, jitter=p.jitter)
    h = harness_for(ctx)
    cases: dict[str, dict[str, Any]] = {}
    try:
        for case in p.cases:  # e.g. {"name": ..., "code": 421, "times": 2}
            cases[case.name] = {"receipt": receipt("backoff"), **case.model_dump()}
        h.mailbox.set_script(_refusals(cases))
        await asyncio.sleep(0.1)
        ids = {n: await h.enqueue(QUEUE, c["receipt"], policy) for n, c in cases.items()}
        ctx.progress(f"{ctx.variant.name}: receipts retrying on schedule", 0, len(ids))
        finished = await h.wait_finished(
            QUEUE, list(ids.values()), timeout_s=policy.schedule_s()[-1] + 10
        )
        ctx.progress(f"{ctx.variant.name}: receipts finished", len(ids), len(ids))
    finally:
        h.mailbox.clear_script()
        await h.close()
    return _backoff_result(h, cases, finished, policy.schedule_s())


def _refusals(cases: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The SMTP sink's script: each case's receipt refused with its code (`times` times, or
    always)."""
    return [
        {
            "code": c["code"],
            "match": c["receipt"].charge_id,
            **({"times": c["times"]} if c.get("times") is not None else {}),
        }
        for c in cases.values()
    ]


def _backoff_result(
    h: JobsHarness,
    cases: Mapping[str, Mapping[str, Any]],
    finished: list[JobTimes],
    computed: list[float],
) -> ScenarioResult:
    """Each case's attempts against the schedule, and the schedule's two errors over all
    cases."""
    metrics: dict[str, float] = {}
    rows = []
    drift = step = 0.0
    for (name, c), job in zip(cases.items(), finished, strict=True):
        measured = _attempt_times(h, c["receipt"].charge_id)
        errors = [m - s for m, s in zip(measured, computed, strict=False)]
        drift = max([drift, *map(abs, errors)])
        step = max([step, *(abs(b - a) for a, b in itertools.pairwise(errors))])
        rows.append(
            as_row(
                case=name,
                state=job.state,
                attempts=job.attempts_made,
                computed_s=[round(s, 3) for s in computed[: len(measured)]],
                measured_s=[round(m, 3) for m in measured],
                reason=job.failed_reason or "-",
            )
        )
        metrics |= _case_metrics(c.get("metric_prefix", ""), job, measured, computed)
    metrics["max_drift_ms"] = ms(drift)  # how late the last attempt is, overheads summed
    metrics["max_step_error_ms"] = ms(step)  # one wait against its configured delay
    return ScenarioResult(metrics, rows)


def _case_metrics(
    prefix: str, job: JobTimes, measured: list[float], computed: list[float]
) -> dict[str, float]:
    """One case's BACKOFF_PER_CASE metrics (grpc_resilience_mesh/chaos/scenarios/declarations.py)
    under its prefix (-1 for a time when no attempt was seen)."""
    return {
        f"{prefix}attempts_made": job.attempts_made,
        f"{prefix}delivered": float(job.state == "completed"),
        f"{prefix}last_attempt_s": round(measured[-1], 3) if measured else -1.0,
        f"{prefix}computed_last_s": round(computed[len(measured) - 1], 3) if measured else -1.0,
    }


async def receipt_throughput(ctx: ScenarioContext) -> ScenarioResult:
    """N jobs of `job_s` each on a fresh queue and a fresh worker with this concurrency/limiter."""
    p = ctx.params_as(ReceiptThroughputParams)
    jobs, job_s = p.jobs, p.job_s
    concurrency, rate_max, window_s = p.concurrency, p.rate_max, p.rate_window_s
    h = harness_for(ctx)
    queue = f"tput-{ctx.variant.name}-{int(time.time())}"
    worker = f"worker-{queue}"
    env = {
        "NOTIFY_QUEUE": queue,
        "NOTIFY_CONCURRENCY": str(concurrency),
        "NOTIFY_RATE_MAX": str(rate_max),
        "NOTIFY_RATE_DURATION_MS": str(round(window_s * 1000)),
    }
    try:
        h.mailbox.set_script([{"delay_s": job_s, "match": f"ch_tput{ctx.variant.name}"}])
        await asyncio.to_thread(h.mesh.start_worker, worker, env)
        policy = ReceiptRetry(attempts=1)
        started = time.time()
        ids = [
            await h.enqueue(queue, receipt(f"tput{ctx.variant.name}"), policy) for _ in range(jobs)
        ]
        ctx.progress(f"{ctx.variant.name}: {jobs} receipt jobs running", 0, jobs)
        done = await h.wait_finished(queue, ids, timeout_s=jobs * job_s + 30)
        ctx.progress(f"{ctx.variant.name}: receipt jobs finished", jobs, jobs)
    finally:
        h.mailbox.clear_script()
        if worker in h.mesh.alive():
            await asyncio.to_thread(h.mesh.kill, worker, signal.SIGTERM)
        await h.close()
    measured = max(j.finished_on for j in done) - started
    theory = p.theory_s
    completed = sum(j.state == "completed" for j in done)
    return ScenarioResult(
        {
            "measured_ms": ms(measured),
            "theory_ms": ms(theory),
            "completed": completed,
            "overhead_ms": ms(measured - theory),
        },
        [
            as_row(
                jobs=jobs,
                job_ms=ms(job_s),
                concurrency=concurrency,
                limiter=f"{rate_max}/{window_s:g}s" if rate_max else "none",
            )
        ],
    )


async def duplicate_enqueue(ctx: ScenarioContext) -> ScenarioResult:
    """One real charge; its receipt job enqueued again (as a relay that lost Redis's reply
    would): one job, one receipt."""
    h = harness_for(ctx)
    p = ctx.params_as(DuplicateEnqueueParams)
    copies = p.copies
    try:
        ctx.progress(f"{ctx.variant.name}: one checkout, {copies} more enqueues", 0, copies + 1)
        (charge,) = await checkouts(ctx.target.gateway, ctx.target.api_key, 1)
        job_id = f"receipt-{charge}"
        first = await h.wait_finished(QUEUE, [job_id], timeout_s=15)
        job = await h.queue(QUEUE).getJob(job_id)
        for _ in range(copies):
            await h.queue(QUEUE).add("receipt", job.data, ReceiptRetry().job_options(job_id))
        ctx.progress(f"{ctx.variant.name}: {copies} copies enqueued", copies + 1, copies + 1)
        await asyncio.sleep(p.settle_s)
        after = await h.times(QUEUE, job_id)
        counts = await h.queue(QUEUE).getJobCounts("waiting", "active", "delayed")
    finally:
        await h.close()
    receipts = sum(1 for m in h.mailbox.messages() if m.charge_id == charge)
    return ScenarioResult(
        {
            "enqueued": copies + 1,
            "jobs": 1.0 if after.state != "unknown" else 0.0,
            "runs": after.attempts_started or after.attempts_made,
            "receipts": receipts,
            "queued_after": float(sum(counts.values())),
        },
        [as_row(job=job_id, state=first[0].state, state_after_copies=after.state)],
    )
