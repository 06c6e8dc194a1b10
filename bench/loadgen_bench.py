"""CPU per call of each load generator against a server that answers at once (issue 16).

    python -m bench.loadgen_bench [--rate 600 --rate 1500] [--calls 6000] [--rounds 3]

Runs the same open-loop plans through the Python generator (loadgen) and the Go one
(loadgen/go, `make peers`), alternating, against one grpc.aio server in this process that
answers every GetHome at once; prints each generator's own CPU (utime+stime, as it reports it)
per call sent (calls dropped for want of a free slot cost next to nothing and are left out).
Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence

import grpc

from loadgen.in_process import LoadGenerator, plan_for
from mesh.v1 import gateway_pb2

REPLY = bytes(gateway_pb2.GetHomeResponse().SerializeToString())


async def _answer(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    return REPLY


async def bench(rates: Sequence[float], calls: int, rounds: int) -> None:
    handler = grpc.method_handlers_generic_handler(
        "mesh.v1.Gateway", {"GetHome": grpc.unary_unary_rpc_method_handler(_answer)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        for rate in rates:
            for round_ in range(1, rounds + 1):
                for kind in ("python", "go"):
                    os.environ["MESH_LOADGEN"] = kind
                    generator = LoadGenerator()
                    try:  # a first small plan pays the process's start-up and connection
                        await generator.run(plan_for(address, 20, concurrency=4))
                        plan = plan_for(address, calls, concurrency=64, rate_per_s=rate)
                        result = await generator.run(plan)
                    finally:
                        await generator.close()
                    codes = result.codes()
                    sent = len(result.outcomes) - codes.pop("CLIENT_DROPPED", 0)
                    cpu = result.generator_cpu_s or 0.0
                    print(
                        f"rate {rate:.0f}/s round {round_} {kind:6}: "
                        f"{cpu * 1e6 / max(1, sent):.0f} us CPU per call sent "
                        f"({sent} sent: {dict(codes)}; {result.elapsed_s:.1f} s)",
                        flush=True,
                    )
    finally:
        await server.stop(None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadgen_bench")
    parser.add_argument("--rate", type=float, action="append", help="calls/s (repeatable)")
    parser.add_argument("--calls", type=int, default=6000, help="calls per plan")
    parser.add_argument("--rounds", type=int, default=3, help="alternating pairs per rate")
    args = parser.parse_args(argv)
    asyncio.run(bench(args.rate or [600.0, 1500.0], args.calls, args.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
