"""How fast a grpc.aio server takes calls from grpc core while its event loop is busy.

grpc.aio keeps one `grpc_server_request_call` outstanding per server: a call arriving while
the server's main loop waits for the event loop stays in grpc core's queue of unrequested
calls, with its deadline already running (core starts it when the headers arrive). So no
layer inside the server, a shedder included, sees a call before the loop has taken it, and the
loop takes the next only after a few of its own iterations. This measures that intake.

A server process with one method that answers at once and records how much of the call's
deadline had gone before its handler ran (what the call waited in front of every layer). A
callback that re-schedules itself with `call_soon` burns `busy_ms` of CPU per loop iteration,
standing for the work of other calls. The client (this process) sends `calls` calls at once
and the server reports how many loop iterations taking them all needed.

    python -m grpc_resilience_mesh.bench.aio_intake --calls 500 --busy-ms 0 1 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from dataclasses import dataclass

import grpc
import grpc.aio

DEADLINE_S = 60.0
"""Each call's deadline: long enough that none expires while it waits to be taken."""


@dataclass(frozen=True)
class Intake:
    """One measurement: `calls` taken while each loop iteration burnt `busy_ms`."""

    busy_ms: float
    calls: int
    iterations: int
    """Loop iterations (burns) from the first call's handler to the last's."""
    waited_p50_ms: float
    waited_max_ms: float
    """Deadline gone before the handler ran: the wait in front of the server's layers."""

    @property
    def calls_per_iteration(self) -> float:
        return self.calls / max(self.iterations, 1)


async def _serve(calls: int, busy_ms: float) -> None:
    waited: list[float] = []
    iterations = [0]
    marks: list[int] = []
    all_taken = asyncio.Event()

    async def handler(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        if not waited:
            marks.append(iterations[0])
        left = context.time_remaining()
        waited.append(DEADLINE_S - (DEADLINE_S if left is None else left))
        if len(waited) == calls:
            all_taken.set()
        return b""

    method = grpc.unary_unary_rpc_method_handler(handler)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"M": method}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    loop = asyncio.get_running_loop()

    def burn() -> None:
        iterations[0] += 1
        end = time.perf_counter() + busy_ms / 1000
        while time.perf_counter() < end:
            pass
        loop.call_soon(burn)

    if busy_ms > 0:
        loop.call_soon(burn)
    print(port, flush=True)
    try:
        await asyncio.wait_for(all_taken.wait(), DEADLINE_S)
    except TimeoutError:
        pass  # reported with the calls taken so far
    waited.sort()
    result = {
        "iterations": iterations[0] - (marks[0] if marks else 0),
        "waited_p50_ms": 1000 * waited[len(waited) // 2] if waited else 0.0,
        "waited_max_ms": 1000 * waited[-1] if waited else 0.0,
        "calls": len(waited),
    }
    print(json.dumps(result), flush=True)
    await server.stop(0)


async def _send(port: int, calls: int) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        await channel.channel_ready()
        method = channel.unary_unary("/t.T/M")
        await asyncio.gather(*(method(b"", timeout=DEADLINE_S) for _ in range(calls)))


def measure(calls: int, busy_ms: float) -> Intake:
    """One server process, `calls` calls sent at once from this one."""
    command = [
        sys.executable,
        "-m",
        "grpc_resilience_mesh.bench.aio_intake",
        "--serve",
        "--calls",
        str(calls),
    ]
    command += ["--busy-ms", str(busy_ms)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        asyncio.run(_send(port, calls))
        figures = json.loads(server.stdout.readline())
        server.wait(10)
    return Intake(
        busy_ms,
        figures["calls"],
        figures["iterations"],
        figures["waited_p50_ms"],
        figures["waited_max_ms"],
    )


def line(intake: Intake) -> str:
    return (
        f"busy {intake.busy_ms:g} ms per loop iteration: {intake.calls} calls taken in "
        f"{intake.iterations} iterations ({intake.calls_per_iteration:.2f} per iteration); "
        f"waited in front p50 {intake.waited_p50_ms:.0f} ms, max {intake.waited_max_ms:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--busy-ms", type=float, nargs="+", default=[0.0, 1.0, 2.0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.calls, args.busy_ms[0]))
        return
    for busy_ms in args.busy_ms:
        print(line(measure(args.calls, busy_ms)), flush=True)


if __name__ == "__main__":
    main()
