"""Unary gRPC latency and throughput, direct versus through the embedded Toxiproxy."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from chaos.toxiproxy.client import ToxiproxyClient, ToxiproxyError


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def _health_server() -> AsyncIterator[int]:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield port
    finally:
        await server.stop(None)


@asynccontextmanager
async def _toxiproxy_process() -> AsyncIterator[ToxiproxyClient]:
    """The proxy runs in its own process, as `mesh toxiproxy` does, so it gets its own GIL."""
    port = _free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "chaos.toxiproxy.server",
        "--port",
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=2.0)
    try:
        for _ in range(100):
            try:
                await asyncio.to_thread(client.version)
                break
            except ToxiproxyError:
                await asyncio.sleep(0.1)
        else:
            raise RuntimeError("toxiproxy did not start within 10 s")
        yield client
    finally:
        process.terminate()
        await process.wait()


async def _round(stub: Any, calls: int, concurrency: int) -> tuple[list[float], float]:
    """Run `calls` Check RPCs with `concurrency` in flight; latencies in ms and elapsed s."""
    latencies_ms: list[float] = []
    remaining = calls
    request = health_pb2.HealthCheckRequest()

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            await stub.Check(request, timeout=10)
            latencies_ms.append((time.perf_counter() - start) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies_ms, time.perf_counter() - started


def _summary(latencies_ms: list[float], elapsed_s: float) -> dict[str, float]:
    ordered = sorted(latencies_ms)
    return {
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "throughput_rps": len(ordered) / elapsed_s,
    }


async def run_proxy_bench(
    calls: int = 3000, concurrency: int = 64, rounds: int = 3
) -> dict[str, Any]:
    """Interleave direct and proxied rounds against one health server; return both plus ratios."""
    async with _health_server() as target_port, _toxiproxy_process() as toxiproxy:
        proxy = await asyncio.to_thread(
            toxiproxy.create_proxy, "bench", "127.0.0.1:0", f"127.0.0.1:{target_port}"
        )
        targets = {"direct": f"127.0.0.1:{target_port}", "proxied": proxy["listen"]}
        channels = {mode: grpc.aio.insecure_channel(target) for mode, target in targets.items()}
        try:
            stubs = {mode: health_pb2_grpc.HealthStub(ch) for mode, ch in channels.items()}
            for stub in stubs.values():
                await _round(stub, min(calls, 500), concurrency)
            samples: dict[str, list[float]] = {mode: [] for mode in stubs}
            elapsed: dict[str, float] = dict.fromkeys(stubs, 0.0)
            for _ in range(rounds):
                for mode, stub in stubs.items():
                    latencies, seconds = await _round(stub, calls, concurrency)
                    samples[mode].extend(latencies)
                    elapsed[mode] += seconds
        finally:
            for channel in channels.values():
                await channel.close()
    direct = _summary(samples["direct"], elapsed["direct"])
    proxied = _summary(samples["proxied"], elapsed["proxied"])
    p50_ratio = proxied["p50_ms"] / direct["p50_ms"]
    throughput_ratio = proxied["throughput_rps"] / direct["throughput_rps"]
    return {
        "variants": {
            "direct": {
                "p50_ms": direct["p50_ms"],
                "p99_ms": direct["p99_ms"],
                "throughput": direct["throughput_rps"],
            },
            "proxied": {
                "p50_ms": proxied["p50_ms"],
                "p99_ms": proxied["p99_ms"],
                "throughput": proxied["throughput_rps"],
                "p50_ratio": p50_ratio,
                "throughput_ratio": throughput_ratio,
            },
        },
        "calls": calls,
        "concurrency": concurrency,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "direct": direct,
        "proxied": proxied,
        "p50_ratio": p50_ratio,
        "p99_ratio": proxied["p99_ms"] / direct["p99_ms"],
        "throughput_ratio": throughput_ratio,
    }


def format_proxy_bench(result: dict[str, Any]) -> str:
    lines = [
        f"unary gRPC Check, {result['calls']} calls x {result['rounds']} rounds, "
        f"{result['concurrency']} in flight, {result['cpus']} CPUs",
        f"{'':10}{'p50 ms':>10}{'p99 ms':>10}{'calls/s':>12}",
    ]
    for mode in ("direct", "proxied"):
        row = result[mode]
        lines.append(
            f"{mode:10}{row['p50_ms']:10.2f}{row['p99_ms']:10.2f}{row['throughput_rps']:12.0f}"
        )
    lines.append(
        f"{'ratio':10}{result['p50_ratio']:10.2f}{result['p99_ratio']:10.2f}"
        f"{result['throughput_ratio']:12.2f}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", dest="json_path", default=None, help="also write JSON here")
    args = parser.parse_args(argv)
    result = asyncio.run(run_proxy_bench(args.calls, args.concurrency, args.rounds))
    print(format_proxy_bench(result))
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
