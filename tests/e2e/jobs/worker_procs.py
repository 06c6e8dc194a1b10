"""Drill workers as processes (`python -m
grpc_resilience_mesh.chaos.scenarios.receipts.drill_worker`: the receipt worker obeying the jobs'
drills), for the tests in which a worker must die or block its own event loop; a dead one is
replaced, as a supervisor would."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from grpc_resilience_mesh.chaos.scenarios.receipts.drills import DRILL_WORKER
from grpc_resilience_mesh.launch.ports import free_port
from tests.e2e.jobs.jobs_helpers import worker_process_env


@dataclass
class WorkerProcs:
    redis: str
    smtp: str
    queue: str
    env: dict[str, str]
    size: int = 2
    procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    metrics_addr: dict[int, str] = field(default_factory=dict)
    """Each live worker's /metrics address, by PID."""
    deaths: list[int] = field(default_factory=list)
    """The exit status of each worker that died on its own."""

    async def start(self) -> None:
        while len(self.procs) < self.size:
            metrics = f"127.0.0.1:{free_port()}"
            env = {**self.env, "METRICS_ADDR": metrics}
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                DRILL_WORKER,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=worker_process_env(self.redis, self.smtp, self.queue, **env),
            )
            self.procs.append(proc)
            self.metrics_addr[proc.pid] = metrics

    async def metric(self, sample: str) -> float:
        """A sample (`name{labels}`) summed over the live workers' /metrics."""

        def scrape(addr: str) -> float:
            try:
                with urllib.request.urlopen(f"http://{addr}/metrics", timeout=5) as reply:
                    text = reply.read().decode()
            except urllib.error.URLError:
                return 0.0  # just restarted, not serving yet: it has counted nothing

            return sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith(sample + " ")
            )

        live = [self.metrics_addr[p.pid] for p in self.procs if p.returncode is None]
        return sum([await asyncio.to_thread(scrape, addr) for addr in live])

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
