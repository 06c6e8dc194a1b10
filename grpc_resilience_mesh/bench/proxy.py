"""Unary gRPC latency and throughput: direct, through the embedded Toxiproxy, and through real
Toxiproxy 2.12 (`.peers/bin/toxiproxy-server`, from `make peers`) when it is built, in one run."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy, binary_path
from grpc_resilience_mesh.loadgen.percentile import percentile


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
    """The proxy runs in its own process, as `mesh toxiproxy` does, so it gets its own GIL,
    and with an API token, as `mesh up` starts it."""
    port = free_port()
    token = secrets.token_urlsafe(32)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "grpc_resilience_mesh.embedded_toxiproxy.server",
        "--port",
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, TOKEN_ENV: token},
    )
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=2.0, token=token)
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


@asynccontextmanager
async def _real_toxiproxy() -> AsyncIterator[ToxiproxyClient]:
    real = RealToxiproxy()
    await asyncio.to_thread(real.start)
    try:
        yield ToxiproxyClient(real.base_url, timeout_s=2.0)
    finally:
        await asyncio.to_thread(real.stop)


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
    return {
        "p50_ms": percentile(latencies_ms, 50),
        "p99_ms": percentile(latencies_ms, 99),
        "throughput_rps": len(latencies_ms) / elapsed_s,
    }


async def _proxy(client: ToxiproxyClient, target_port: int) -> str:
    proxy = await asyncio.to_thread(
        client.create_proxy, "bench", "127.0.0.1:0", f"127.0.0.1:{target_port}"
    )
    return str(proxy["listen"])


def _variant(row: dict[str, float], direct: dict[str, float]) -> dict[str, float]:
    return {
        "p50_ms": row["p50_ms"],
        "p99_ms": row["p99_ms"],
        "throughput": row["throughput_rps"],
        "p50_ratio": row["p50_ms"] / direct["p50_ms"],
        "throughput_ratio": row["throughput_rps"] / direct["throughput_rps"],
    }


async def run_proxy_bench(
    calls: int = 3000, concurrency: int = 64, rounds: int = 3, real: bool | None = None
) -> dict[str, Any]:
    """Interleave direct, embedded-proxied and (when built, or real=True) real-proxied rounds
    against one health server; return each with its ratios to direct."""
    with_real = binary_path().exists() if real is None else real
    async with AsyncExitStack() as stack:
        target_port = await stack.enter_async_context(_health_server())
        targets = {"direct": f"127.0.0.1:{target_port}"}
        embedded = await stack.enter_async_context(_toxiproxy_process())
        targets["proxied"] = await _proxy(embedded, target_port)
        if with_real:
            real_client = await stack.enter_async_context(_real_toxiproxy())
            targets["real"] = await _proxy(real_client, target_port)
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
    rows = {mode: _summary(samples[mode], elapsed[mode]) for mode in samples}
    direct = rows["direct"]
    variants: dict[str, Any] = {
        "direct": {
            "p50_ms": direct["p50_ms"],
            "p99_ms": direct["p99_ms"],
            "throughput": direct["throughput_rps"],
        },
        "proxied": _variant(rows["proxied"], direct),
    }
    result: dict[str, Any] = {
        "variants": variants,
        "calls": calls,
        "concurrency": concurrency,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "direct": direct,
        "proxied": rows["proxied"],
        "p50_ratio": variants["proxied"]["p50_ratio"],
        "p99_ratio": rows["proxied"]["p99_ms"] / direct["p99_ms"],
        "throughput_ratio": variants["proxied"]["throughput_ratio"],
    }
    if "real" in rows:
        variants["real"] = _variant(rows["real"], direct)
        result["real"] = rows["real"]
        result["real_p99_ratio"] = rows["real"]["p99_ms"] / direct["p99_ms"]
    return result


def format_proxy_bench(result: dict[str, Any]) -> str:
    lines = [
        f"unary gRPC Check, {result['calls']} calls x {result['rounds']} rounds, "
        f"{result['concurrency']} in flight, {result['cpus']} CPUs",
        f"{'':10}{'p50 ms':>10}{'p99 ms':>10}{'calls/s':>12}",
    ]
    for mode in ("direct", "proxied", "real"):
        if mode not in result:
            continue
        row = result[mode]
        lines.append(
            f"{mode:10}{row['p50_ms']:10.2f}{row['p99_ms']:10.2f}{row['throughput_rps']:12.0f}"
        )
        if mode != "direct":
            base = result["direct"]
            lines.append(
                f"{'  ratio':10}{row['p50_ms'] / base['p50_ms']:10.2f}"
                f"{row['p99_ms'] / base['p99_ms']:10.2f}"
                f"{row['throughput_rps'] / base['throughput_rps']:12.2f}"
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
