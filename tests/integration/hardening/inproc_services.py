"""Real services assembled in this process with serve(), wired to each other directly (no proxy):
the gateway's front door as it runs in production, cheap enough for a load test."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from asyncio import FIRST_COMPLETED
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.services.gateway import servicer as gateway
from grpc_resilience_mesh.services.profile import servicer as profile
from grpc_resilience_mesh.services.recommendation import servicer as recommendation
from grpc_resilience_mesh.services.runtime.server import Runtime, Service, serve
from grpc_resilience_mesh.services.topology import EDGES
from tests.support.polling import await_until

BUILDS: dict[str, Callable[[Runtime], Awaitable[Service]]] = {
    "profile": profile.build,
    "recommendation": recommendation.build,
    "gateway": gateway.build,
}


@dataclass
class Served:
    """Where each service listens and serves /metrics; `stop()` drains them all."""

    listen: dict[str, str] = field(default_factory=dict)
    admin: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)
    stops: list[asyncio.Event] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def stop(self) -> None:
        for stop in self.stops:
            stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), timeout=20)

    async def scrape(self, name: str) -> str:
        """Service `name`'s /metrics, fetched off the loop: the services serve it on this one."""

        def fetch() -> str:
            with urllib.request.urlopen(self.metrics[name], timeout=5) as reply:
                return str(reply.read().decode())

        return await asyncio.to_thread(fetch)

    async def server_calls(self, name: str, method: str) -> Counter[str]:
        """mesh_server_calls_total of `method` on service `name`, by code."""
        text = await self.scrape(name)
        counts: Counter[str] = Counter()
        for line in text.splitlines():
            if line.startswith("mesh_server_calls_total{") and f'method="{method}"' in line:
                code = re.search(r'code="([A-Z_]+)"', line)
                assert code is not None, line
                counts[code.group(1)] += int(float(line.rsplit(" ", 1)[1]))
        return counts

    async def metric(self, name: str, metric: str, method: str) -> float:
        """The value of `metric` for `method` on service `name`, summed over its other labels
        (0 when it has none yet)."""
        text = await self.scrape(name)
        found = re.findall(rf'^{metric}{{method="{re.escape(method)}"[^}}]*}} (\S+)$', text, re.M)
        return sum(float(v) for v in found)


async def _until_serving(addr: str, metrics_addr: str, task: asyncio.Task[None]) -> None:
    """Health answers on `addr` and /metrics accepts connections (or serve() failed: raise)."""

    async def ready() -> None:
        async with grpc.aio.insecure_channel(addr) as channel:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), wait_for_ready=True, timeout=10
            )
        host, _, port = metrics_addr.rpartition(":")

        async def metrics_accepts() -> bool:
            try:
                _, writer = await asyncio.open_connection(host, int(port))
            except OSError:
                return False
            writer.close()
            await writer.wait_closed()
            return True

        await await_until(metrics_accepts, timeout_s=15.0, what=f"/metrics on {metrics_addr}")

    waiting = asyncio.ensure_future(ready())
    done, _ = await asyncio.wait({waiting, task}, timeout=15, return_when=FIRST_COMPLETED)
    if task in done:
        waiting.cancel()
        task.result()
        raise RuntimeError(f"serve() on {addr} returned before serving")
    if waiting not in done:
        waiting.cancel()
        raise TimeoutError(f"{addr} never served")
    waiting.result()


@asynccontextmanager
async def serving(
    names: tuple[str, ...] = ("profile", "recommendation", "gateway"),
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Served]:
    """`names` in dependency order (callees first), each started with serve() and `env`."""
    ports = iter(free_ports(3 * len(names)))
    served = Served()
    for name in names:
        served.listen[name] = f"127.0.0.1:{next(ports)}"
        served.admin[name] = f"127.0.0.1:{next(ports)}"
        served.metrics[name] = f"127.0.0.1:{next(ports)}"
    try:
        for name in names:
            service_env = {
                "LISTEN_ADDR": served.listen[name],
                "ADMIN_ADDR": served.admin[name],
                "METRICS_ADDR": served.metrics[name],
                "MESH_TRACING": "0",
                "SHUTDOWN_GRACE_S": "0.5",
                **(env or {}),
            }
            for edge in EDGES:
                if edge.caller == name:  # a callee not started here refuses connections
                    service_env[edge.addr_env] = served.listen.get(edge.dependency, "127.0.0.1:1")
            stop = asyncio.Event()
            task = asyncio.create_task(serve(name, BUILDS[name], service_env, stop_event=stop))
            served.stops.insert(0, stop)
            served.tasks.insert(0, task)
            await _until_serving(served.listen[name], served.metrics[name], task)
        served.metrics = {n: f"http://{a}/metrics" for n, a in served.metrics.items()}
        yield served
    finally:
        await served.stop()
