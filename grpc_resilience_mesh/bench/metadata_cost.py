"""What one more metadata entry costs a grpc.aio call: the price of `resilience-timeout-ms`, and of
the internal token's `authorization: Bearer <43 characters>`
(grpc_resilience_mesh.services.runtime.internal_auth).

The mesh's client sends every attempt's deadline as `resilience-timeout-ms` (the intake gate's
input, grpc_aio_resilience.intake) beside the `grpc-timeout` grpc sends anyway. This measures what
that entry costs grpc itself, with nothing of the mesh around it: a raw grpc.aio server with one
unary method that answers at once, and a client in the same process sending calls one at a
time, in rounds that alternate between the metadata variants (so the machine's drift falls on
all of them alike). The figure is the process's CPU per call (client and server: both ends pay
for an entry, one encoding it, the other decoding it), the median of the rounds, and its ratio
to the call without the entry.

    python -m grpc_resilience_mesh.bench.metadata_cost --calls 2000 --rounds 7
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import time
from collections.abc import Sequence

import grpc
import grpc.aio

from grpc_aio_resilience import TIMEOUT_KEY, timeout_value
from grpc_resilience_mesh.services.runtime.internal_auth import internal_metadata

METHOD = "/bench.Echo/Call"
DEADLINE_S = 5.0
VARIANTS: dict[str, tuple[tuple[str, str], ...]] = {
    "no entry": (),
    TIMEOUT_KEY: ((TIMEOUT_KEY, timeout_value(DEADLINE_S)),),
    "internal token": internal_metadata(secrets.token_urlsafe(32)),  # as `mesh up` makes it
}
ENTRIES = frozenset(key for metadata in VARIANTS.values() for key, _ in metadata)


class Echo:
    """Answers at once; counts the calls that arrived carrying an entry."""

    def __init__(self) -> None:
        self.carried = 0

    async def call(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        self.carried += any(key in ENTRIES for key, _ in context.invocation_metadata() or ())
        return request


async def cpu_per_call_us(calls: int, rounds: int) -> dict[str, list[float]]:
    """Each variant's CPU per call (us), one figure per round. Raises if the entry did not
    reach the server on exactly the calls that sent it (the figure would be of something else)."""
    server = grpc.aio.server()
    echo = Echo()
    handler = grpc.unary_unary_rpc_method_handler(echo.call)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Echo", {"Call": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    figures: dict[str, list[float]] = {name: [] for name in VARIANTS}
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(METHOD)
            for metadata in VARIANTS.values():  # warm-up: connection, caches
                for _ in range(200):
                    await call(b"x", timeout=DEADLINE_S, metadata=metadata)
            for _ in range(rounds):
                for name, metadata in VARIANTS.items():
                    start = time.process_time()
                    for _ in range(calls):
                        await call(b"x", timeout=DEADLINE_S, metadata=metadata)
                    figures[name].append((time.process_time() - start) / calls * 1e6)
    finally:
        await server.stop(None)
    sent = (200 + calls * rounds) * sum(1 for m in VARIANTS.values() if m)
    if echo.carried != sent:
        raise RuntimeError(
            f"the entries reached the server on {echo.carried} calls, sent on {sent}"
        )
    return figures


def report(figures: dict[str, list[float]]) -> list[str]:
    """Per variant: the median CPU per call, its ratio to the floor's, and the median of each
    round's difference from the floor's same round (the machine's drift cancels in a pair)."""
    floors = figures["no entry"]
    floor = statistics.median(floors)
    lines = ["metadata          CPU us/call (median)  x no entry  paired +us  rounds"]
    for name, values in figures.items():
        median = statistics.median(values)
        paired = statistics.median(v - f for v, f in zip(values, floors, strict=True))
        shown = ", ".join(f"{v:.0f}" for v in values)
        lines.append(
            f"{name:<17} {median:>20.1f}  {median / floor:>10.3f}  {paired:>9.1f}  {shown}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000, help="calls per variant per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds, variants alternating")
    args = parser.parse_args(argv)
    if args.calls < 1 or args.rounds < 1:
        parser.error("--calls and --rounds must be at least 1")
    print("\n".join(report(asyncio.run(cpu_per_call_us(args.calls, args.rounds)))))


if __name__ == "__main__":
    main()
