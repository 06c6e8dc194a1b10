"""What the job experiments share: the mesh's Redis and mailbox, enqueueing receipts the way
payment's relay does, waiting for jobs to finish, and checkouts through the gateway."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
from bullmq import Queue
from redis.asyncio import Redis

from grpc_resilience_mesh.chaos.registry import ScenarioContext
from grpc_resilience_mesh.client.mail.mailbox import Mailbox
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.contracts.receipt_job import (
    DRILL_KEY,
    JOB_NAME,
    Receipt,
    ReceiptRetry,
    job_id_for,
)
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc

FINISHED = ("completed", "failed")


@dataclass(frozen=True)
class JobEvent:
    """One entry of BullMQ's event stream: `active` when a worker takes the job, `stalled`
    when a stalled-job check finds its lock gone."""

    t: float
    event: str
    job_id: str


@dataclass
class JobTimes:
    """One finished job as BullMQ recorded it (times in epoch seconds)."""

    id: str
    state: str
    attempts_made: int
    attempts_started: int
    processed_on: float
    finished_on: float
    failed_reason: str


async def job_events(redis_addr: str, queue: str) -> list[JobEvent]:
    """Every event BullMQ recorded on the queue's stream, oldest first (the stream keeps the
    last 10000: enough for a queue of an experiment's or a test's own)."""
    client = Redis.from_url(f"redis://{redis_addr}", decode_responses=True)
    try:
        entries = cast(
            list[tuple[str, dict[str, str]]], await client.xrange(f"bull:{queue}:events")
        )
    finally:
        await client.aclose()
    return [
        JobEvent(int(entry_id.split("-")[0]) / 1000, f.get("event", ""), f.get("jobId", ""))
        for entry_id, f in entries or []
    ]


def count_events(events: list[JobEvent], kind: str, job_id: str) -> int:
    return sum(1 for e in events if e.event == kind and e.job_id == job_id)


class JobsHarness:
    """Handles on a running mesh's queue and mailbox."""

    def __init__(self, mesh: Mesh) -> None:
        assert mesh.state is not None, "start the mesh first"
        self.mesh = mesh
        self.redis = mesh.state.extra["redis"]
        self.mailbox = Mailbox(Path(mesh.state.extra["mailbox"]))
        self._queues: dict[str, Queue] = {}

    def queue(self, name: str) -> Queue:
        if name not in self._queues:
            self._queues[name] = Queue(name, {"connection": f"redis://{self.redis}"})
        return self._queues[name]

    async def enqueue(
        self,
        queue: str,
        receipt: Receipt,
        policy: ReceiptRetry,
        drill: Mapping[str, Any] | None = None,
    ) -> str:
        """Add a receipt job as payment's relay does; `drill` adds a test-only fault drill
        (drills.py) that only a drill worker started with NOTIFY_DRILLS=1 obeys."""
        job_id = job_id_for(receipt.charge_id)
        data = receipt.to_data() | ({DRILL_KEY: dict(drill)} if drill else {})
        await self.queue(queue).add(JOB_NAME, data, policy.job_options(job_id))
        return job_id

    async def events(self, queue: str) -> list[JobEvent]:
        return await job_events(self.redis, queue)

    async def wait_finished(
        self, queue: str, job_ids: list[str], timeout_s: float
    ) -> list[JobTimes]:
        q = self.queue(queue)
        deadline = time.monotonic() + timeout_s
        pending = set(job_ids)
        while pending and time.monotonic() < deadline:
            for job_id in list(pending):
                if await q.getJobState(job_id) in FINISHED:
                    pending.discard(job_id)
            if pending:
                await asyncio.sleep(0.02)
        return [await self.times(queue, j) for j in job_ids]

    async def times(self, queue: str, job_id: str) -> JobTimes:
        q = self.queue(queue)
        job = await q.getJob(job_id)
        state = str(await q.getJobState(job_id))
        if job is None:
            return JobTimes(job_id, state, 0, 0, 0.0, 0.0, "")
        return JobTimes(
            id=job_id,
            state=state,
            attempts_made=int(job.attemptsMade or 0),
            attempts_started=int(getattr(job, "attemptsStarted", 0) or 0),
            processed_on=(job.processedOn or 0) / 1000,
            finished_on=(job.finishedOn or 0) / 1000,
            failed_reason=str(job.failedReason or ""),
        )

    async def close(self) -> None:
        for q in self._queues.values():
            await q.close()


def harness_for(ctx: ScenarioContext) -> JobsHarness:
    """The harness on the embedded mesh the scenario runs against (job experiments need it)."""
    if ctx.target.mesh is None:
        raise RuntimeError("job experiments need the embedded mesh (no --target)")
    return JobsHarness(ctx.target.mesh)


def receipt(tag: str, user_id: str = "u-0001", amount_cents: int = 1250) -> Receipt:
    """A receipt for a charge no ledger holds (experiments that drive the queue directly)."""
    return Receipt(f"ch_{tag}_{uuid.uuid4().hex[:12]}", user_id, amount_cents, "USD", time.time())


async def checkouts(gateway: str, api_key: str | None, n: int) -> list[str]:
    """`n` successful checkouts through the gateway; their charge ids."""
    md = (("authorization", f"Bearer {api_key}"),) if api_key else ()
    async with grpc.aio.insecure_channel(gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)

        async def one(i: int) -> str:
            reply = await stub.Checkout(
                gateway_pb2.CheckoutRequest(
                    user_id=f"u-{i % 40 + 1:04d}",
                    amount_cents=1000 + i,
                    currency="USD",
                    idempotency_key=f"jobs-{uuid.uuid4().hex}",
                ),
                timeout=10,
                metadata=md,
            )
            return str(reply.charge_id)

        return list(await asyncio.gather(*(one(i) for i in range(n))))


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def as_row(**values: Any) -> dict[str, Any]:
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in values.items()}
