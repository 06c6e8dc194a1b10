"""Open-loop load on a real grpc.aio recommendation server with a declared worker pool, and
the figures a user reads from it (goodput, accepted p50/p99, refusals, CPU per call).

`python -m tests.integration.resilience.overload [seconds]` prints them for 1x, 2x and 5x the
capacity (N=4 workers, 20 ms: 200 calls/s) per limit algorithm, with the server in a process of
its own so that the load generator's CPU does not slow the server (the CPU per call is then
the server's alone).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import grpc
import grpc.aio
from prometheus_client import CollectorRegistry

from grpc_aio_resilience import from_dict, to_dict
from grpc_aio_resilience.events import Event, EventBus, PoolWorkDone
from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy
from grpc_resilience_mesh.services.recommendation.servicer import (
    DeclaredCapacity,
    RecommendationServicer,
)
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from grpc_resilience_mesh.services.v1 import recommendation_pb2, recommendation_pb2_grpc

POOL: dict[str, Any] = {"workers": 4, "service_time_s": 0.020}
CAPACITY_PER_S = 200.0  # 4 workers / 20 ms
REQUEST = recommendation_pb2.PopularRequest(limit=3)


@dataclass(frozen=True)
class Served:
    target: str
    metrics: MeshMetrics
    pool_done: list[PoolWorkDone]
    """Every call the pool ran, as it ended: its wait for a worker and the workers in use.
    The pool keeps its own schedule (a worker's next call starts when the last was due to
    end), so these are the pool's, not the event loop's: a starved machine delays when the
    client sees an answer, not what the pool did."""


@asynccontextmanager
async def capacity_server(policy: MeshServerPolicy) -> AsyncIterator[Served]:
    """Recommendation on 127.0.0.1:0 with the policy's pool and admission; stopped after."""
    bus = EventBus()
    metrics = MeshMetrics(CollectorRegistry(), "recommendation")
    bus.subscribe(metrics.listener)
    pool_done: list[PoolWorkDone] = []

    def on_event(event: Event) -> None:
        if isinstance(event, PoolWorkDone):
            pool_done.append(event)

    bus.subscribe(on_event)
    capacity = DeclaredCapacity(bus)
    capacity.update(policy.pool)
    servicer = RecommendationServicer(None, capacity=capacity)  # type: ignore[arg-type]
    interceptors = server_layers("recommendation", policy, bus, FaultTable())
    server = grpc.aio.server(interceptors=interceptors)
    recommendation_pb2_grpc.add_RecommendationServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield Served(f"127.0.0.1:{port}", metrics, pool_done)
    finally:
        await server.stop(None)


@dataclass(frozen=True)
class Outcome:
    code: grpc.StatusCode
    latency_s: float
    sent_s: float  # since the load started


@dataclass(frozen=True)
class Figures:
    offered_per_s: float
    goodput_per_s: float
    p50_s: float
    p99_s: float
    refused: int
    codes: dict[str, int]
    cpu_per_call_s: float
    cpu_share: float
    pool_wait_p50_s: float = float("nan")
    """The median wait for a worker of the calls the pool ran (the queue in front of it)."""


async def open_loop(
    target: str, rate_per_s: float, duration_s: float, deadline_s: float = 1.0
) -> tuple[list[Outcome], float, float]:
    """Sends `rate_per_s x duration_s` Popular calls at fixed intervals, whatever the answers
    (open loop), each with `deadline_s`; returns the outcomes, the wall and CPU seconds."""
    count = round(rate_per_s * duration_s)
    outcomes: list[Outcome] = []
    async with grpc.aio.insecure_channel(target) as channel:
        stub = recommendation_pb2_grpc.RecommendationServiceStub(channel)
        await stub.Popular(REQUEST, timeout=5.0)  # connected before the clock starts
        start = time.monotonic()
        cpu_start = time.process_time()

        async def one() -> None:
            sent = time.monotonic()
            try:
                await stub.Popular(REQUEST, timeout=deadline_s)
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as err:
                code = err.code()
            outcomes.append(Outcome(code, time.monotonic() - sent, sent - start))

        tasks = []
        for i in range(count):
            delay = start + i / rate_per_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one()))
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=deadline_s + 10)
        return outcomes, time.monotonic() - start, time.process_time() - cpu_start


def figures(
    outcomes: list[Outcome],
    rate_per_s: float,
    duration_s: float,
    wall_s: float,
    cpu_s: float,
    warmup_s: float = 0.0,
    pool_waits: list[float] | None = None,
) -> Figures:
    """Goodput is the OK calls that ended in the window from `warmup_s` (an adaptive limit
    starts from its initial limit) to the end of the load, per second of it, as the overload
    sweep counts it (`window_goodput_per_s`): a queue's calls that end after the load are not
    the server's rate. Of the calls sent after `warmup_s`: p50/p99 of the accepted (OK) calls
    and the codes. CPU is the whole run's."""
    steady = [o for o in outcomes if o.sent_s >= warmup_s]
    ok = [o.latency_s for o in steady if o.code is grpc.StatusCode.OK]
    in_window = [
        o
        for o in outcomes
        if o.code is grpc.StatusCode.OK and warmup_s <= o.sent_s + o.latency_s <= duration_s
    ]
    codes = Counter(o.code.name for o in steady)
    return Figures(
        offered_per_s=rate_per_s,
        goodput_per_s=len(in_window) / (duration_s - warmup_s),
        p50_s=percentile(ok, 50) if ok else float("nan"),
        p99_s=percentile(ok, 99) if ok else float("nan"),
        refused=codes.get("RESOURCE_EXHAUSTED", 0),
        codes=dict(codes),
        cpu_per_call_s=cpu_s / max(len(outcomes), 1),
        cpu_share=cpu_s / wall_s,
        pool_wait_p50_s=percentile(pool_waits, 50) if pool_waits else float("nan"),
    )


async def measure(
    policy: MeshServerPolicy,
    load: float,
    duration_s: float,
    warmup_s: float = 1.0,
    deadline_s: float = 1.0,
) -> Figures:
    """Figures of `load` x the policy pool's capacity for `duration_s` (steady after warmup)."""
    rate = load * policy.pool.workers / policy.pool.service_time_s
    async with capacity_server(policy) as served:
        outcomes, wall_s, cpu_s = await open_loop(served.target, rate, duration_s, deadline_s)
        waits = [done.waited_s for done in served.pool_done]
    return figures(outcomes, rate, duration_s, wall_s, cpu_s, warmup_s, waits[1:])


def _serve_child(policy_json: str, conn: Connection) -> None:
    """A server process: sends its target, serves until told to stop, then its CPU seconds."""

    async def serve() -> None:
        async with capacity_server(from_dict(MeshServerPolicy, json.loads(policy_json))) as served:
            cpu_start = time.process_time()
            conn.send(served.target)
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)
            conn.send(time.process_time() - cpu_start)

    asyncio.run(serve())


async def measure_apart(
    policy: MeshServerPolicy, load: float, duration_s: float, warmup_s: float = 1.0
) -> Figures:
    """As `measure`, the server in a child process; CPU per call is the server's."""
    rate = load * policy.pool.workers / policy.pool.service_time_s
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=_serve_child, args=(json.dumps(to_dict(policy)), theirs))
    child.start()
    try:
        target = await asyncio.get_running_loop().run_in_executor(None, ours.recv)
        outcomes, wall_s, _ = await open_loop(target, rate, duration_s)
        ours.send("stop")
        server_cpu_s = await asyncio.get_running_loop().run_in_executor(None, ours.recv)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    return figures(outcomes, rate, duration_s, wall_s, server_cpu_s, warmup_s)


VARIANTS: dict[str, dict[str, Any]] = {
    "static-64": {"max_in_flight": 64},
    "vegas": {"limit": {"algorithm": "vegas"}},
    "gradient2": {"limit": {"algorithm": "gradient2", "gradient2": {"min_limit": 1}}},
    # The reference's defaults (min_limit 20), one sample per 1 s window as Netflix's README
    # wires Gradient2 into a gRPC server.
    "gradient2-windowed": {"limit": {"algorithm": "gradient2", "window": {"enabled": True}}},
}


def variant(
    name: str, workers: int = POOL["workers"], service_time_s: float = POOL["service_time_s"]
) -> MeshServerPolicy:
    pool = {**POOL, "workers": workers, "service_time_s": service_time_s}
    return from_dict(MeshServerPolicy, {"pool": pool, **VARIANTS[name]})


async def main(duration_s: float) -> None:
    print("variant     load  goodput/s  p50 ms  p99 ms  refused  server cpu/call ms  cpu share")
    for name in VARIANTS:
        for load in (1.0, 2.0, 5.0):
            f = await measure_apart(variant(name), load, duration_s)
            print(
                f"{name:<11} {load:>3.0f}x  {f.goodput_per_s:>9.1f}  {f.p50_s * 1e3:>6.1f}  "
                f"{f.p99_s * 1e3:>6.1f}  {f.refused:>7}  {f.cpu_per_call_s * 1e3:>18.3f}  "
                f"{f.cpu_share:>9.2f}  {f.codes}"
            )


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0))
