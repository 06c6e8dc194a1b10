"""Test-only fault drills a job can carry (job data `drill`), for the job experiments.

Only the drill worker obeys them (`python -m
grpc_resilience_mesh.chaos.scenarios.receipts.drill_worker`, the product's receipt worker with
`obey_drill` as its before-send hook), and only when started with NOTIFY_DRILLS=1; the experiments
start such workers on queues of their own. The product's own worker (`python -m
grpc_resilience_mesh.services.notification`) has no drills, and payment's relay never writes the
key, so no customer can reach them. Each reproduces a seed-004 failure with the real worker and the
real BullMQ:

- `{"exit": true}`: a poison job. The worker process exits at once (os._exit, no cleanup, as a
  segfault or an OOM kill would), every time it picks the job up. BullMQ sees a stalled job and
  runs it again, until it has stalled more than maxStalledCount times; then it fails the job.
- `{"block_s": S}`: the handler blocks the event loop for S seconds (time.sleep, as CPU-bound
  or synchronous code would). bullmq renews locks on the event loop, so a block longer than the
  lock lets the lock expire: another worker finds the job stalled and runs it again while this
  one still runs it (a false stall).
- `{"block_s": S, "offload": true}`: the same blocking call run in a thread (what the worker
  does with its own blocking work: smtplib runs on a thread pool), so the loop keeps renewing
  the lock and the job runs once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grpc_resilience_mesh.services.contracts.receipt_job import DRILL_KEY

log = logging.getLogger("grpc_resilience_mesh.chaos.scenarios.receipts.drills")

DRILL_WORKER = "grpc_resilience_mesh.chaos.scenarios.receipts.drill_worker"
"""The module a drill worker runs as (`python -m`), in place of
`grpc_resilience_mesh.services.notification`."""
POISON_EXIT_CODE = 70
"""The poison drill's exit status (EX_SOFTWARE): the supervisor says "exited with code 70"."""
MAX_BLOCK_S = 60.0


@dataclass(frozen=True)
class Drill:
    """What one job asks the worker to do before sending."""

    exit: bool = False
    block_s: float = 0.0
    offload: bool = False

    @classmethod
    def of(cls, data: Any) -> Drill | None:
        """The job's drill, or None; a malformed one is ignored (logged), never obeyed."""
        raw = data.get(DRILL_KEY) if isinstance(data, Mapping) else None
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            log.warning("ignored malformed drill", extra={"drill": repr(raw)[:80]})
            return None
        block = raw.get("block_s", 0.0)
        if (
            not isinstance(block, int | float)
            or isinstance(block, bool)
            or not math.isfinite(block)
            or not 0 <= block <= MAX_BLOCK_S
        ):
            log.warning("ignored malformed drill", extra={"drill": repr(raw)[:80]})
            return None
        return cls(
            exit=raw.get("exit") is True, block_s=float(block), offload=raw.get("offload") is True
        )

    async def run(self) -> None:
        if self.exit:
            log.error("poison drill: worker exits hard")
            sys.stderr.flush()
            os._exit(POISON_EXIT_CODE)
        if self.block_s and self.offload:
            await asyncio.to_thread(time.sleep, self.block_s)
        elif self.block_s:
            time.sleep(self.block_s)  # noqa: ASYNC251 - blocks the loop on purpose: a false stall


async def obey_drill(job_data: Any) -> None:
    """The drill worker's before-send hook: run the job's drill, if it carries a valid one."""
    drill = Drill.of(job_data)
    if drill is not None:
        await drill.run()
