"""Read and repair the receipts queue: list jobs by state, show one, retry a failed one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bullmq import Queue

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.services.contracts.receipt_job import QUEUE

STATES = ("waiting", "active", "delayed", "completed", "failed")


@dataclass(frozen=True)
class JobView:
    """What `mesh jobs` prints about one job."""

    id: str
    state: str
    attempts_made: int
    attempts: int
    failed_reason: str
    processed_on: int | None
    finished_on: int | None
    data: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def redis_addr(state_dir: Path, override: str | None) -> str:
    """--redis, else the running mesh's (<state_dir>/mesh.json)."""
    if override:
        return override
    state = MeshState.load(state_dir)
    if state is None or "redis" not in state.extra:
        raise LookupError(f"no running mesh in {state_dir} (start `mesh up`, or give --redis)")
    return state.extra["redis"]


class QueueAdmin:
    """A bullmq Queue opened for inspection."""

    def __init__(self, addr: str, queue: str = QUEUE) -> None:
        self.queue = Queue(queue, {"connection": f"redis://{addr}"})

    async def view(self, job: Any, state: str | None = None) -> JobView:
        return JobView(
            id=str(job.id),
            state=state or str(await self.queue.getJobState(job.id)),
            attempts_made=int(job.attemptsMade or 0),
            attempts=int(job.opts.get("attempts") or 1),
            failed_reason=str(job.failedReason or ""),
            processed_on=job.processedOn,
            finished_on=job.finishedOn,
            data=job.data if isinstance(job.data, dict) else {"raw": job.data},
        )

    async def list(self, states: tuple[str, ...] = STATES, limit: int = 50) -> list[JobView]:
        views = []
        for state in states:
            for job in await self.queue.getJobs([state], 0, limit - 1):
                if job is not None:
                    views.append(await self.view(job, state))
        return views

    async def show(self, job_id: str) -> JobView | None:
        job = await self.queue.getJob(job_id)
        return None if job is None else await self.view(job)

    async def retry(self, job_id: str) -> str:
        """Move a failed job back to wait, attempts reset; returns the new state."""
        job = await self.queue.getJob(job_id)
        if job is None:
            raise LookupError(f"no job {job_id!r}")
        state = await self.queue.getJobState(job_id)
        if state != "failed":
            raise ValueError(f"job {job_id} is {state}, not failed: nothing to retry")
        await job.retry("failed", {"resetAttemptsMade": True, "resetAttemptsStarted": True})
        return str(await self.queue.getJobState(job_id))

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = await self.queue.getJobCounts(*STATES)
        return counts

    async def close(self) -> None:
        await self.queue.close()


def dumps(view: JobView) -> str:
    return json.dumps(view.as_dict(), indent=2, default=str)
