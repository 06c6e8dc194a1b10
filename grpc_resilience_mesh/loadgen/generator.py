"""The load generator process: `python -m grpc_resilience_mesh.loadgen.generator`, a Plan on stdin.

Cheap by construction: every request is serialised before the load starts, calls go through generic
`channel.unary_unary` callables (bytes in, bytes out) on one channel, and per call the only Python
work is timing and one record; records leave in batches (grpc_resilience_mesh/loadgen/ protocol.py).
Its CPU over the load window is its own /proc utime+stime.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Callable

import grpc

from grpc_aio_resilience import RETRYABLE_CODES, TIMEOUT_KEY, fate_in, pushback_s, timeout_value
from grpc_resilience_mesh.loadgen.procstat import cpu_s
from grpc_resilience_mesh.loadgen.protocol import Plan, Record, Request, encode_end, encode_records
from grpc_resilience_mesh.services.customers import user_id
from grpc_resilience_mesh.services.v1 import gateway_pb2, payment_pb2

METHODS = {"home": "/mesh.v1.Gateway/GetHome", "checkout": "/mesh.v1.Gateway/Checkout"}
RETRYABLE = frozenset(code.name for code in RETRYABLE_CODES)
TICK_S = 0.01
"""An open loop wakes at most this often and starts every call due by then: a wake-up per
call costs the generator as much CPU as the call itself."""


def serialise(request: Request) -> bytes:
    if request.rpc == "home":
        home = gateway_pb2.GetHomeRequest(user_id=user_id(request.user))
        return bytes(home.SerializeToString())
    checkout = gateway_pb2.CheckoutRequest(
        user_id=user_id(request.user),
        amount_cents=request.amount_cents,
        currency="USD",
        idempotency_key=request.key,
    )
    return bytes(checkout.SerializeToString())


def _reply_fields(rpc: str, reply: bytes) -> tuple[str, str, str]:
    """(degraded parts, checkout status, charge id) of an answer."""
    if rpc == "home":
        home = gateway_pb2.GetHomeResponse.FromString(reply)
        return ",".join(f"{d.part}:{d.served_by}" for d in home.degraded), "", ""
    out = gateway_pb2.CheckoutResponse.FromString(reply)
    status = payment_pb2.ChargeStatus.Name(out.status).removeprefix("CHARGE_STATUS_")
    return "", status, out.charge_id


class _Load:
    """One plan's load on one channel: every request serialised up front, records pending
    until the next batch."""

    def __init__(self, plan: Plan, channel: grpc.aio.Channel, stop: asyncio.Event) -> None:
        self.plan = plan
        self.stop = stop
        self.payloads = [serialise(r) for r in plan.requests]
        every: tuple[tuple[str, str], ...] = (
            (TIMEOUT_KEY, timeout_value(plan.timeout_s)),  # as the mesh's clients
            *((("authorization", f"Bearer {plan.api_key}"),) if plan.api_key else ()),
        )
        self.metadata = [
            (*every, ("traceparent", f"00-{r.trace_id}-{r.span_id}-01")) if r.trace_id else every
            for r in plan.requests
        ]
        self.calls = {rpc: channel.unary_unary(m) for rpc, m in METHODS.items()}
        self.pending: list[Record] = []
        self.start = time.perf_counter()

    def over(self, i: int) -> bool:
        return (
            i >= len(self.payloads)
            or self.stop.is_set()
            or time.perf_counter() - self.start > self.plan.max_duration_s
        )

    async def once(self, i: int) -> Record:
        rpc = self.plan.requests[i].rpc
        start = time.perf_counter()
        call = self.calls[rpc](
            self.payloads[i], timeout=self.plan.timeout_s, metadata=self.metadata[i]
        )
        try:
            reply = await call
        except grpc.aio.AioRpcError as err:
            trailers = err.trailing_metadata()
            back = pushback_s(trailers)
            ms = None if back is None else (-1 if back < 0 else round(back * 1000))
            detail = (err.details() or "")[:160]
            latency = time.perf_counter() - start
            return (i, start, latency, err.code().name, "", "", "", ms, detail, fate_in(trailers))
        latency = time.perf_counter() - start
        fate = fate_in(await call.trailing_metadata())
        return (i, start, latency, "OK", *_reply_fields(rpc, reply), None, "", fate)

    async def one(self, i: int) -> None:
        first = record = await self.once(i)
        for _ in range(self.plan.client_retries):
            if record[3] not in RETRYABLE or (record[7] or 0) < 0:
                break
            await asyncio.sleep((record[7] or 200) / 1000)
            record = await self.once(i)
        if record is not first:  # the user's view: from the first try to the last answer
            total = record[1] + record[2] - first[1]
            record = (i, first[1], total, *record[3:])
        self.pending.append(record)

    async def flush(self, emit: Callable[[str], None]) -> None:
        while True:
            await asyncio.sleep(self.plan.batch_s)
            if self.pending:
                emit(encode_records(self.pending[:]))
                self.pending.clear()

    async def closed_loop(self) -> None:
        """`concurrency` workers, each sending its next call when the last answered."""
        counter = itertools.count()

        async def worker() -> None:
            while not self.over(i := next(counter)):
                await self.one(i)
                if self.plan.think_s:
                    await asyncio.sleep(self.plan.think_s)

        await asyncio.gather(*(worker() for _ in range(max(1, self.plan.concurrency))))

    async def open_loop(self, rate_per_s: float) -> None:
        """Calls started on schedule whatever the answers, at most `concurrency` in flight;
        one that finds no free slot is recorded CLIENT_DROPPED."""
        slots = asyncio.Semaphore(self.plan.concurrency)
        tasks: set[asyncio.Task[None]] = set()

        async def gated(i: int) -> None:
            async with slots:
                await self.one(i)

        for i in range(len(self.payloads)):
            if self.over(i):
                break
            delay = self.start + i / rate_per_s - time.perf_counter()
            if delay > 0:  # wake once per TICK_S and start every call that is due
                await asyncio.sleep(max(delay, TICK_S))
            if slots.locked():
                now = time.perf_counter()
                self.pending.append((i, now, 0.0, "CLIENT_DROPPED", "", "", "", None, "", ""))
                continue
            task = asyncio.create_task(gated(i))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)


async def generate(plan: Plan, emit: Callable[[str], None], stop: asyncio.Event) -> None:
    """Send the plan's requests and emit batches of records, then the end line."""
    async with grpc.aio.insecure_channel(plan.target) as channel:
        load = _Load(plan, channel, stop)
        flusher = asyncio.create_task(load.flush(emit))
        cpu_before = cpu_s()
        load.start = time.perf_counter()
        if plan.rate_per_s is None:
            await load.closed_loop()
        else:
            await load.open_loop(plan.rate_per_s)
        elapsed = time.perf_counter() - load.start
        cpu_after = cpu_s()
        flusher.cancel()
    if load.pending:
        emit(encode_records(load.pending))
    used = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    emit(encode_end(elapsed, used))


async def _main() -> None:
    """Run plans one after another until stdin closes; a `stop` line ends the current one
    (one that arrives after its plan ended is ignored). One task reads stdin, and a plan line
    that comes while a plan is still running (its end line is out, it is closing) waits its
    turn: a reader that ended the plan on any line ate the next plan's line while the plan
    closed, and the runner waited for that plan's outcomes forever."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    plans: asyncio.Queue[str | None] = asyncio.Queue()
    running: list[asyncio.Event] = []  # the running plan's stop, while one runs

    def emit(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()

    async def read() -> None:
        while line := (await reader.readline()).decode():
            if line.strip() == "stop":
                for stop in running:
                    stop.set()
            elif line.strip():
                plans.put_nowait(line)
        for stop in running:  # EOF: the runner wants the load to end
            stop.set()
        plans.put_nowait(None)

    reading = asyncio.create_task(read())
    try:
        while (line := await plans.get()) is not None:
            stop = asyncio.Event()
            running[:] = [stop]
            try:
                await generate(Plan.loads(line), emit, stop)
            finally:
                running.clear()
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
