"""Overhead of the resilience layer: raw grpc.aio vs the full stack, same unary workload.

Both servers run in this process (the fake ProfileService returns a fixed profile); rounds
alternate raw and full so drift on a shared machine hits both alike.
Run: python -m chaos.bench.overhead [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import grpc
import grpc.aio
from mesh.resilience.channel import resilient_channel
from mesh.resilience.events import EventBus
from mesh.resilience.policy import load_policy
from mesh.resilience.server import FaultTable, server_interceptors
from mesh.v1 import profile_pb2, profile_pb2_grpc

_PROFILE = profile_pb2.GetProfileResponse(
    profile=profile_pb2.Profile(user_id="u1", display_name="Ada", interests=["books", "tea"])
)
_REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


class _FixedProfile(profile_pb2_grpc.ProfileServiceServicer):
    async def GetProfile(self, request: Any, context: Any) -> profile_pb2.GetProfileResponse:
        return _PROFILE


async def _start(interceptors: list[grpc.aio.ServerInterceptor]) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server(interceptors=interceptors)
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(_FixedProfile(), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def _round(stub: Any, calls: int, concurrency: int) -> tuple[list[float], float]:
    latencies_s: list[float] = []
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            await stub.GetProfile(_REQUEST, timeout=5.0)
            latencies_s.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies_s, time.perf_counter() - started


def _summary(latencies_s: list[float], elapsed_s: float) -> dict[str, float]:
    cuts = statistics.quantiles(latencies_s, n=100)
    return {
        "p50_ms": cuts[49] * 1000,
        "p99_ms": cuts[98] * 1000,
        "throughput_rps": len(latencies_s) / elapsed_s,
    }


async def run_overhead_bench(calls: int = 3000, concurrency: int = 64, rounds: int = 3) -> dict:  # type: ignore[type-arg]
    """Interleaves `rounds` rounds of raw and full-stack calls; returns figures and ratios."""
    policy = load_policy("full", {})
    bus = EventBus()
    raw_server, raw_target = await _start([])
    full_server, full_target = await _start(
        server_interceptors("profile", policy.server("profile"), bus, FaultTable())
    )
    raw_channel = grpc.aio.insecure_channel(raw_target, options=[("grpc.enable_retries", 0)])
    # Bulkhead sized to the offered concurrency: the bench measures cost, not rejections.
    edge = policy.edge("gateway_to_profile").model_copy(deep=True)
    edge = edge.model_copy(
        update={"bulkhead": edge.bulkhead.model_copy(update={"max_concurrent": concurrency})}
    )
    full_channel = resilient_channel(
        full_target, edge="gateway_to_profile", dependency="profile", policy=edge, bus=bus
    )
    stubs = {
        "raw": profile_pb2_grpc.ProfileServiceStub(raw_channel),  # type: ignore[no-untyped-call]
        "full": profile_pb2_grpc.ProfileServiceStub(full_channel),  # type: ignore[no-untyped-call]
    }
    samples: dict[str, list[float]] = {"raw": [], "full": []}
    elapsed: dict[str, float] = {"raw": 0.0, "full": 0.0}
    try:
        for stub in stubs.values():
            await _round(stub, min(calls, 500), concurrency)  # warm-up: connections, caches
        for _ in range(rounds):
            for name, stub in stubs.items():
                latencies_s, elapsed_s = await _round(stub, calls, concurrency)
                samples[name] += latencies_s
                elapsed[name] += elapsed_s
    finally:
        await raw_channel.close()
        await full_channel.close()
        await raw_server.stop(None)
        await full_server.stop(None)
    raw, full = (_summary(samples[n], elapsed[n]) for n in ("raw", "full"))
    return {
        "calls": calls,
        "concurrency": concurrency,
        "rounds": rounds,
        "raw": raw,
        "full": full,
        "p50_ratio": full["p50_ms"] / raw["p50_ms"],
        "p99_ratio": full["p99_ms"] / raw["p99_ms"],
        "throughput_ratio": full["throughput_rps"] / raw["throughput_rps"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = asyncio.run(run_overhead_bench(args.calls, args.concurrency, args.rounds))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
