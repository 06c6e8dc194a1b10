"""Receipt workers as processes (`python -m mesh.notification`), for the tests in which a
worker must die or block its own event loop; a dead one is replaced, as a supervisor would."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field

from tests.e2e.jobs.jobs_helpers import worker_process_env


@dataclass
class WorkerProcs:
    redis: str
    smtp: str
    queue: str
    env: dict[str, str]
    size: int = 2
    procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    deaths: list[int] = field(default_factory=list)
    """The exit status of each worker that died on its own."""

    async def start(self) -> None:
        while len(self.procs) < self.size:
            self.procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "mesh.notification",
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=worker_process_env(self.redis, self.smtp, self.queue, **self.env),
                )
            )

    async def replace_dead(self) -> None:
        for proc in [p for p in self.procs if p.returncode is not None]:
            self.procs.remove(proc)
            self.deaths.append(proc.returncode or 0)
        await self.start()

    async def stop(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
