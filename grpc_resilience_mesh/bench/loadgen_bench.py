"""CPU per call of each load generator against a server that answers at once (issue 16).

    python -m grpc_resilience_mesh.bench.loadgen_bench [--rate 600 --rate 1500] [--calls 6000]
    [--rounds 3]
                                  [--results docs/results/loadgen.md]

Runs the same open-loop plans through the Python generator (loadgen) and the Go one
(grpc_resilience_mesh/loadgen/go, `make peers`), alternating, against one grpc.aio server in this
process that answers every GetHome at once; prints each generator's own CPU (utime+stime, as it
reports it) per call sent (calls dropped for want of a free slot cost next to nothing and are left
out). Loopback only. `--results` rewrites the page's measured block
(grpc_resilience_mesh/bench/results.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import grpc

from grpc_resilience_mesh.bench.results import Machine, markdown_table, rewrite
from grpc_resilience_mesh.loadgen.in_process import LoadGenerator, plan_for
from grpc_resilience_mesh.services.v1 import gateway_pb2

REPLY = bytes(gateway_pb2.GetHomeResponse().SerializeToString())
KINDS = ("python", "go")


@dataclass(frozen=True)
class Measured:
    """One plan through one generator: its CPU per call sent."""

    rate: float
    round: int
    kind: str
    us_per_call: float
    sent: int


async def _answer(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    return REPLY


async def _one(address: str, rate: float, calls: int, round_: int, kind: str) -> Measured:
    os.environ["MESH_LOADGEN"] = kind
    generator = LoadGenerator()
    try:  # a first small plan pays the process's start-up and connection
        await generator.run(plan_for(address, 20, concurrency=4))
        result = await generator.run(plan_for(address, calls, concurrency=64, rate_per_s=rate))
    finally:
        await generator.close()
    codes = result.codes()
    sent = len(result.outcomes) - codes.pop("CLIENT_DROPPED", 0)
    cpu = result.generator_cpu_s or 0.0
    measured = Measured(rate, round_, kind, cpu * 1e6 / max(1, sent), sent)
    print(
        f"rate {rate:.0f}/s round {round_} {kind:6}: {measured.us_per_call:.0f} us CPU per "
        f"call sent ({sent} sent: {dict(codes)}; {result.elapsed_s:.1f} s)",
        flush=True,
    )
    return measured


async def bench(rates: Sequence[float], calls: int, rounds: int) -> list[Measured]:
    handler = grpc.method_handlers_generic_handler(
        "mesh.v1.Gateway", {"GetHome": grpc.unary_unary_rpc_method_handler(_answer)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        return [
            await _one(address, rate, calls, round_, kind)
            for rate in rates
            for round_ in range(1, rounds + 1)
            for kind in KINDS
        ]
    finally:
        await server.stop(None)


def results_block(measured: list[Measured], calls: int, machine: Machine, command: str) -> str:
    """Per rate: each generator's us of CPU per call sent, by round, and Go's median over
    Python's."""
    rows = []
    for rate in dict.fromkeys(m.rate for m in measured):
        by_kind = {
            k: [m.us_per_call for m in measured if m.rate == rate and m.kind == k] for k in KINDS
        }
        ratio = median(by_kind["go"]) / median(by_kind["python"]) if all(by_kind.values()) else None
        rows.append(
            (
                f"{rate:,.0f}/s",
                *(", ".join(f"{us:.0f}" for us in by_kind[k]) or "-" for k in KINDS),
                "-" if ratio is None else f"**{ratio:.2f}**",
            )
        )
    return (
        f"{machine.line()}; open loop, {calls:,} calls per plan, 64 slots, the generators "
        "alternating against one grpc.aio server that answers at once.\n\n"
        + markdown_table(
            ("rate", "Python, us per call", "Go, us per call", "Go / Python (medians)"), rows
        )
        + f"\nReproduce: `{command}`\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grpc_resilience_mesh.bench.loadgen_bench")
    parser.add_argument("--rate", type=float, action="append", help="calls/s (repeatable)")
    parser.add_argument("--calls", type=int, default=6000, help="calls per plan")
    parser.add_argument("--rounds", type=int, default=3, help="alternating pairs per rate")
    parser.add_argument(
        "--results", type=Path, default=None, help="rewrite this results page's measured block"
    )
    args = parser.parse_args(argv)
    rates = args.rate or [600.0, 1500.0]
    measured = asyncio.run(bench(rates, args.calls, args.rounds))
    if args.results is not None:
        command = "python -m grpc_resilience_mesh.bench.loadgen_bench " + " ".join(
            f"--rate {r:g}" for r in rates
        )
        command += f" --calls {args.calls} --rounds {args.rounds}"
        block = results_block(measured, args.calls, Machine.now(), command)
        rewrite(args.results, "Load generators: Go and Python", block)
        print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
