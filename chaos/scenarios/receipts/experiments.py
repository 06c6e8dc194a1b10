"""The background-job experiments: receipt-backoff, receipt-throughput, worker-crash,
duplicate-enqueue. Each is a scenario (chaos/registry.py) run against the embedded mesh."""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from redis.asyncio import Redis

from chaos.registry import ScenarioContext, ScenarioResult, scenario
from chaos.scenarios.receipts.harness import JobsHarness, as_row, checkouts, ms, receipt
from embedded_toxiproxy.client import ToxiproxyClient
from mesh.contracts.receipt_job import QUEUE, ReceiptRetry


def _harness(ctx: ScenarioContext) -> JobsHarness:
    if ctx.target.mesh is None:
        raise RuntimeError("job experiments need the embedded mesh (no --target)")
    return JobsHarness(ctx.target.mesh)


def _attempt_times(h: JobsHarness, charge_id: str) -> list[float]:
    """When the SMTP server saw each attempt, relative to the first."""
    times = [a["t"] for a in h.mailbox.attempts() if a["charge_id"] == charge_id]
    return [t - times[0] for t in times] if times else []


PER_CASE = ("attempts_made", "delivered", "last_attempt_s", "computed_last_s")


def _backoff_metrics(params: Mapping[str, Any]) -> set[str]:
    """Each case's metrics under its `metric_prefix`, and the schedule's two errors."""
    cases = params.get("cases")
    prefixes = (
        {str(c.get("metric_prefix", "")) for c in cases or [] if isinstance(c, Mapping)}
        if isinstance(cases, list)
        else set()
    )
    return {p + m for p in prefixes for m in PER_CASE} | {"max_drift_ms", "max_step_error_ms"}


@scenario("receipt-backoff", metrics=_backoff_metrics)
async def receipt_backoff(ctx: ScenarioContext) -> ScenarioResult:
    """SMTP refuses by script; the attempts' times are compared with the configured schedule."""
    p = ctx.params
    policy = ReceiptRetry(
        attempts=int(p.get("attempts", 5)),
        backoff_s=float(p["backoff_s"]),
        jitter=float(p.get("jitter", 0.0)),
    )
    h = _harness(ctx)
    cases: dict[str, dict[str, Any]] = {}
    try:
        for case in p["cases"]:  # e.g. {"name": ..., "code": 421, "times": 2}
            r = receipt("backoff")
            cases[case["name"]] = {"receipt": r, **case}
        h.mailbox.set_script(
            [
                {
                    "code": c["code"],
                    "match": c["receipt"].charge_id,
                    **({"times": c["times"]} if c.get("times") is not None else {}),
                }
                for c in cases.values()
            ]
        )
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
    computed = policy.schedule_s()
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
        prefix = c.get("metric_prefix", "")
        metrics[f"{prefix}attempts_made"] = job.attempts_made
        metrics[f"{prefix}delivered"] = float(job.state == "completed")
        metrics[f"{prefix}last_attempt_s"] = round(measured[-1], 3) if measured else -1.0
        metrics[f"{prefix}computed_last_s"] = (
            round(computed[len(measured) - 1], 3) if measured else -1.0
        )
    metrics["max_drift_ms"] = ms(drift)  # how late the last attempt is, overheads summed
    metrics["max_step_error_ms"] = ms(step)  # one wait against its configured delay
    return ScenarioResult(metrics, rows)


@scenario("receipt-throughput", metrics=("measured_ms", "theory_ms", "completed", "overhead_ms"))
async def receipt_throughput(ctx: ScenarioContext) -> ScenarioResult:
    """N jobs of `job_s` each on a fresh queue and a fresh worker with this concurrency/limiter."""
    p = ctx.params
    jobs, job_s = int(p.get("jobs", 30)), float(p.get("job_s", 0.1))
    concurrency, rate_max = int(p["concurrency"]), int(p.get("rate_max", 0))
    window_s = float(p.get("rate_window_s", 1.0))
    h = _harness(ctx)
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
    waves = -(-jobs // concurrency)
    theory = waves * job_s
    if rate_max:  # the limiter lets rate_max jobs start per window: the last starts late
        theory = max(theory, (-(-jobs // rate_max) - 1) * window_s + job_s)
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


async def _drain(queue: Any, timeout_s: float) -> None:
    """Wait until no job is waiting, active or delayed (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        counts = await queue.getJobCounts("waiting", "active", "delayed")
        if not any(counts.values()):
            return
        await asyncio.sleep(0.1)


@scenario(
    "worker-crash",
    metrics=(
        "charges",
        "completed",
        "ran_twice",
        "receipts",
        "duplicates",
        "missing",
        "recovered_after_kill_s",
        "recovered_after_start_s",
    ),
)
async def worker_crash(ctx: ScenarioContext) -> ScenarioResult:
    """kill -9 a worker holding jobs mid-send; another worker recovers them once the locks
    expire; the mailbox gets exactly one receipt per charge."""
    p = ctx.params
    n, lock_ms = int(p.get("charges", 5)), int(p.get("lock_ms", 2000))
    h = _harness(ctx)
    mesh = h.mesh
    assert ctx.target.toxiproxy is not None, "worker-crash needs Toxiproxy in front of SMTP"
    toxi = ToxiproxyClient(ctx.target.toxiproxy, token=ctx.target.admin_token)
    env = {
        "NOTIFY_LOCK_MS": str(lock_ms),
        "NOTIFY_CONCURRENCY": str(n),
        "NOTIFY_STALLED_INTERVAL_MS": str(p.get("stalled_interval_ms", 250)),
    }
    q = h.queue(QUEUE)
    try:
        # Receipts of earlier experiments' checkouts may still be queued: let the mesh's own
        # worker send them first, or the victim would hold those instead of ours.
        ctx.progress(f"{ctx.variant.name}: draining earlier receipts", 0, n)
        await _drain(q, timeout_s=60)
        # Only the victim may take the jobs: the mesh's own worker stops (restarted below).
        await asyncio.to_thread(mesh.kill, "notification", signal.SIGTERM)
        # BullMQ lets one stalled-job scan run per interval, throttled by a key that the worker
        # which scanned last set for ITS interval (the mesh's: half of a 30 s lock). Clear it,
        # or the rescuer's 0.25 s scans wait out the stopped worker's throttle first.
        redis = Redis.from_url(f"redis://{h.redis}")
        try:
            await redis.delete(f"bull:{QUEUE}:stalled-check")
        finally:
            await redis.aclose()
        # Hold every SMTP command 3 s so the kill lands before any message is accepted.
        await asyncio.to_thread(
            toxi.add_toxic,
            "notification_to_smtp",
            "latency",
            "upstream",
            1.0,
            {"latency": int(p.get("smtp_latency_ms", 3000))},
            "hold-smtp",
        )
        await asyncio.to_thread(mesh.start_worker, "victim", env)
        charges = await checkouts(ctx.target.gateway, ctx.target.api_key, n)
        ids = [f"receipt-{c}" for c in charges]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the victim holds all n jobs
            if (await q.getJobCounts("active"))["active"] >= n:
                break
            await asyncio.sleep(0.02)
        await asyncio.to_thread(mesh.start_worker, "rescuer", env)
        killed_at = time.time()
        await asyncio.to_thread(mesh.kill, "victim", signal.SIGKILL)
        ctx.progress(f"{ctx.variant.name}: worker killed, jobs being recovered", 0, n)
        await asyncio.to_thread(toxi.remove_toxic, "notification_to_smtp", "hold-smtp")
        first_started = {j: (await h.times(QUEUE, j)).processed_on for j in ids}
        done = await h.wait_finished(QUEUE, ids, timeout_s=lock_ms / 1000 * 3 + 10)
        ctx.progress(f"{ctx.variant.name}: jobs recovered", n, n)
    finally:
        if "rescuer" in mesh.alive():
            await asyncio.to_thread(mesh.kill, "rescuer", signal.SIGTERM)
        await asyncio.to_thread(mesh.restart_service, "notification")
        await h.close()
    mails = Counter(m.charge_id for m in h.mailbox.messages() if m.charge_id in set(charges))
    recovered = [j.processed_on - killed_at for j in done if j.state == "completed"]
    since_start = [j.processed_on - first_started[j.id] for j in done if first_started[j.id]]
    ran_twice = sum(
        1
        for j in done
        if j.attempts_started >= 2 or j.processed_on > first_started.get(j.id, j.processed_on)
    )
    metrics = {
        "charges": n,
        "completed": sum(j.state == "completed" for j in done),
        "ran_twice": ran_twice,
        "receipts": sum(mails.values()),
        "duplicates": sum(c - 1 for c in mails.values()),
        "missing": sum(1 for c in charges if mails[c] == 0),
        "recovered_after_kill_s": round(max(recovered), 3) if recovered else -1.0,
        "recovered_after_start_s": round(max(since_start), 3) if since_start else -1.0,
    }
    rows = [
        as_row(
            job=j.id,
            state=j.state,
            attempts_started=j.attempts_started,
            rerun_after_s=round(j.processed_on - first_started[j.id], 3),
            after_kill_s=round(j.processed_on - killed_at, 3),
        )
        for j in done
    ]
    return ScenarioResult(metrics, rows)


@scenario("duplicate-enqueue", metrics=("enqueued", "jobs", "runs", "receipts", "queued_after"))
async def duplicate_enqueue(ctx: ScenarioContext) -> ScenarioResult:
    """One real charge; its receipt job enqueued again (as a relay that lost Redis's reply
    would): one job, one receipt."""
    h = _harness(ctx)
    copies = int(ctx.params.get("copies", 3))
    try:
        ctx.progress(f"{ctx.variant.name}: one checkout, {copies} more enqueues", 0, copies + 1)
        (charge,) = await checkouts(ctx.target.gateway, ctx.target.api_key, 1)
        job_id = f"receipt-{charge}"
        first = await h.wait_finished(QUEUE, [job_id], timeout_s=15)
        job = await h.queue(QUEUE).getJob(job_id)
        for _ in range(copies):
            await h.queue(QUEUE).add("receipt", job.data, ReceiptRetry().job_options(job_id))
        ctx.progress(f"{ctx.variant.name}: {copies} copies enqueued", copies + 1, copies + 1)
        await asyncio.sleep(float(ctx.params.get("settle_s", 1.0)))
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
