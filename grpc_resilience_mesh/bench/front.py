"""What the gateway's connection relay (grpc_resilience_mesh.services.runtime.front) costs per call:
the same unary workload straight to a grpc.aio server's TCP port and through the relay to its unix
socket, in interleaved rounds (in reverse order every other round) in one process.

Client, relay and server share the process and its event loop, as the relay shares the gateway's:
the difference between the two variants' CPU per call is the relay's. Both the loop thread's CPU
(`time.thread_time()`, where the relay runs) and the whole process's (`time.process_time()`, grpc
core's threads included) are reported. Run: python -m grpc_resilience_mesh.bench.front [--calls N]
[--concurrency N] [--rounds N] [--results PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from grpc_resilience_mesh.bench.overhead import FixedProfile, timed_round
from grpc_resilience_mesh.bench.results import Machine, markdown_table, rewrite
from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.services.runtime.front import Front, FrontLimits
from grpc_resilience_mesh.services.v1 import profile_pb2_grpc

VARIANTS = ("direct", "relay")


async def _round(stub: Any, calls: int, concurrency: int) -> dict[str, float]:
    latencies_s, wall, loop_cpu, cpu = await timed_round(stub, calls, concurrency)
    return {
        "p50_ms": percentile(latencies_s, 50) * 1000,
        "calls_per_s": calls / wall,
        "loop_cpu_us_per_call": loop_cpu / calls * 1e6,
        "cpu_us_per_call": cpu / calls * 1e6,
    }


async def run(calls: int, concurrency: int, rounds: int) -> dict[str, Any]:
    """Each variant's figures per round, and the relay's CPU per call over direct."""
    front = Front(FrontLimits())
    server = grpc.aio.server()
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(FixedProfile(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.add_insecure_port(front.upstream_addr)
    await server.start()
    front_port = await front.start("127.0.0.1", 0)
    channels = {
        "direct": grpc.aio.insecure_channel(f"127.0.0.1:{port}"),
        "relay": grpc.aio.insecure_channel(f"127.0.0.1:{front_port}"),
    }
    stubs = {name: profile_pb2_grpc.ProfileServiceStub(ch) for name, ch in channels.items()}
    try:
        for stub in stubs.values():
            await _round(stub, 200, concurrency)  # connections made, caches warm
        per_round: list[dict[str, dict[str, float]]] = []
        for i in range(rounds):
            order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
            per_round.append({v: await _round(stubs[v], calls, concurrency) for v in order})
    finally:
        for channel in channels.values():
            await channel.close()
        await server.stop(0)
        await front.close()
    return {"calls": calls, "concurrency": concurrency, "rounds": per_round}


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def results_block(result: dict[str, Any], machine: Machine, command: str) -> str:
    heads = ("round", "variant", "p50 ms", "calls/s", "loop CPU us/call", "process CPU us/call")
    rows = [
        (
            str(i + 1),
            name,
            f"{row['p50_ms']:.2f}",
            f"{row['calls_per_s']:.0f}",
            f"{row['loop_cpu_us_per_call']:.0f}",
            f"{row['cpu_us_per_call']:.0f}",
        )
        for i, variants in enumerate(result["rounds"])
        for name, row in sorted(variants.items())
    ]
    added = {
        key: _median([r["relay"][key] - r["direct"][key] for r in result["rounds"]])
        for key in ("loop_cpu_us_per_call", "cpu_us_per_call")
    }
    return (
        f"{machine.line()}; a unary GetProfile on a fixed servicer, {result['calls']} calls x "
        f"{len(result['rounds'])} interleaved rounds, {result['concurrency']} in flight.\n\n"
        + markdown_table(heads, rows)
        + f"\nThe relay's cost (median over rounds, relay minus direct): "
        f"**{added['loop_cpu_us_per_call']:.0f} us** of loop CPU and "
        f"**{added['cpu_us_per_call']:.0f} us** of process CPU per call.\n\n"
        f"Reproduce: `{command}`\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--results", type=Path, default=None, help="rewrite this results page's measured block"
    )
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.calls, args.concurrency, args.rounds))
    print(json.dumps(result, indent=2))
    if args.results is not None:
        command = (
            f"python -m grpc_resilience_mesh.bench.front --calls {args.calls} "
            f"--concurrency {args.concurrency} --rounds {args.rounds} --results {args.results}"
        )
        rewrite(
            args.results,
            "The gateway's connection relay",
            results_block(result, Machine.now(), command),
        )
        print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
