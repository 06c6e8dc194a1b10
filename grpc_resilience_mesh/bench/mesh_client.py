"""The load client of `mesh bench mesh`, in a process of its own so its CPU is counted apart.

`python -m grpc_resilience_mesh.bench.mesh_client --target ADDR --requests N --concurrency C` (the
API key, if the mesh wants one, comes in the environment as MESH_BENCH_API_KEY: never in argv, where
`ps` shows it and a key starting with '-' reads as an option) [--warmup W]`: sends W GetHome calls,
prints `ready`, waits for a line on stdin, sends N calls with C in flight (one pre-serialised
request, no stub-side encoding), then prints one JSON line: latencies (p50, p99 ms,
grpc_resilience_mesh.loadgen.percentile's nearest rank), elapsed seconds, how many calls failed and
how many answers were degraded (recommendations from the fallback: cheaper, so they skew the CPU).

Why not the load generator (grpc_resilience_mesh/loadgen/, the one load client everywhere else):
this bench's figure is CPU per call summed over every process on GetHome's path, the client's
included, against the same client driving bare grpc.aio (the floor). A client here is part of what
is measured, so it does the least a client can: one request serialised once, a closed loop, a float
per call and no record; the generator builds a per-request plan, sends each with its own trace and
key, and streams a record per call to its runner, work that belongs in an experiment's report and
would add to both columns here. The warm-up and the `ready` handshake keep its start-up out of the
measured window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import grpc

from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.v1 import gateway_pb2

METHOD = "/mesh.v1.Gateway/GetHome"
USER_ID = "u-0001"


KEY_ENV = "MESH_BENCH_API_KEY"
API_KEY = settings.Var(KEY_ENV, settings.text, "", "the API key the benchmark's client sends")


async def _run(target: str, requests: int, concurrency: int, key: str | None, warmup: int) -> None:
    payload = gateway_pb2.GetHomeRequest(user_id=USER_ID).SerializeToString()
    metadata = (("authorization", f"Bearer {key}"),) if key else None
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.unary_unary(METHOD)  # bytes in, bytes out: no serialiser per call
        latencies: list[float] = []
        failures: dict[str, int] = {}
        degraded = 0

        async def batch(count: int, record: bool) -> None:
            remaining = count

            async def worker() -> None:
                nonlocal remaining, degraded
                while remaining > 0:
                    remaining -= 1
                    start = time.perf_counter()
                    try:
                        reply = await call(payload, metadata=metadata, timeout=10.0)
                    except grpc.aio.AioRpcError as err:
                        failures[err.code().name] = failures.get(err.code().name, 0) + 1
                    else:
                        if record and gateway_pb2.GetHomeResponse.FromString(reply).degraded:
                            degraded += 1
                    if record:
                        latencies.append((time.perf_counter() - start) * 1000)

            await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))

        await batch(warmup, record=False)
        if failures:
            print(json.dumps({"error": f"warm-up calls failed: {failures}"}), flush=True)
            return
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        start = time.perf_counter()
        await batch(requests, record=True)
        elapsed = time.perf_counter() - start
    print(json.dumps(summary(requests, elapsed, failures, degraded, latencies)), flush=True)


def summary(
    requests: int, elapsed_s: float, failures: dict[str, int], degraded: int, latencies: list[float]
) -> dict[str, Any]:
    """The window's one JSON line; `latencies` in ms."""
    return {
        "requests": requests,
        "elapsed_s": elapsed_s,
        "failures": failures,
        "degraded": degraded,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
    }


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=200)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    key = API_KEY.read() or None
    asyncio.run(_run(args.target, args.requests, args.concurrency, key, args.warmup))


if __name__ == "__main__":
    main()
