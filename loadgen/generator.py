"""The load generator process: `python -m loadgen.generator`, a Plan on stdin.

Cheap by construction: every request is serialised before the load starts, calls go through
generic `channel.unary_unary` callables (bytes in, bytes out) on one channel, and per call
the only Python work is timing and one record; records leave in batches (loadgen/
protocol.py). Its CPU over the load window is its own /proc utime+stime.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Awaitable, Callable

import grpc

from loadgen.procstat import cpu_s
from loadgen.protocol import Plan, Record, Request, encode_end, encode_records
from mesh.customers import user_id
from mesh.resilience.classify import RETRYABLE_CODES, pushback_s
from mesh.v1 import gateway_pb2, payment_pb2

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


Call = Callable[[int], Awaitable[Record]]


async def generate(plan: Plan, emit: Callable[[str], None], stop: asyncio.Event) -> None:
    """Send the plan's requests and emit batches of records, then the end line."""
    payloads = [serialise(r) for r in plan.requests]
    auth = (("authorization", f"Bearer {plan.api_key}"),) if plan.api_key else ()
    metadata = [
        (*auth, ("traceparent", f"00-{r.trace_id}-{r.span_id}-01")) if r.trace_id else auth
        for r in plan.requests
    ]
    pending: list[Record] = []
    async with grpc.aio.insecure_channel(plan.target) as channel:
        calls = {rpc: channel.unary_unary(m) for rpc, m in METHODS.items()}

        async def once(i: int) -> Record:
            rpc = plan.requests[i].rpc
            start = time.perf_counter()
            try:
                reply = await calls[rpc](payloads[i], timeout=plan.timeout_s, metadata=metadata[i])
            except grpc.aio.AioRpcError as err:
                back = pushback_s(err.trailing_metadata())
                ms = None if back is None else (-1 if back < 0 else round(back * 1000))
                detail = (err.details() or "")[:160]
                latency = time.perf_counter() - start
                return (i, start, latency, err.code().name, "", "", "", ms, detail)
            latency = time.perf_counter() - start
            return (i, start, latency, "OK", *_reply_fields(rpc, reply), None, "")

        async def one(i: int) -> None:
            first = record = await once(i)
            for _ in range(plan.client_retries):
                if record[3] not in RETRYABLE or (record[7] or 0) < 0:
                    break
                await asyncio.sleep((record[7] or 200) / 1000)
                record = await once(i)
            if record is not first:  # the user's view: from the first try to the last answer
                total = record[1] + record[2] - first[1]
                record = (i, first[1], total, *record[3:])
            pending.append(record)

        async def flush() -> None:
            while True:
                await asyncio.sleep(plan.batch_s)
                if pending:
                    emit(encode_records(pending[:]))
                    pending.clear()

        flusher = asyncio.create_task(flush())
        cpu_before = cpu_s()
        start = time.perf_counter()
        n = len(payloads)

        def over(i: int) -> bool:
            return i >= n or stop.is_set() or time.perf_counter() - start > plan.max_duration_s

        if plan.rate_per_s is None:
            counter = itertools.count()

            async def worker() -> None:
                while not over(i := next(counter)):
                    await one(i)
                    if plan.think_s:
                        await asyncio.sleep(plan.think_s)

            await asyncio.gather(*(worker() for _ in range(max(1, plan.concurrency))))
        else:
            slots = asyncio.Semaphore(plan.concurrency)
            tasks: set[asyncio.Task[None]] = set()

            async def gated(i: int) -> None:
                async with slots:
                    await one(i)

            for i in range(n):
                if over(i):
                    break
                delay = start + i / plan.rate_per_s - time.perf_counter()
                if delay > 0:  # wake once per TICK_S and start every call that is due
                    await asyncio.sleep(max(delay, TICK_S))
                if slots.locked():
                    now = time.perf_counter()
                    pending.append((i, now, 0.0, "CLIENT_DROPPED", "", "", "", None, ""))
                    continue
                task = asyncio.create_task(gated(i))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        cpu_after = cpu_s()
        flusher.cancel()
    if pending:
        emit(encode_records(pending))
    used = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    emit(encode_end(elapsed, used))


async def _main() -> None:
    """Run plans one after another until stdin closes; a `stop` line ends the current one
    (one that arrives after its plan ended is ignored)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def emit(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()

    while line := (await reader.readline()).decode():
        if line.strip() in ("stop", ""):
            continue
        plan = Plan.loads(line)
        stop = asyncio.Event()
        ended = asyncio.Event()

        async def watch(stop: asyncio.Event = stop, ended: asyncio.Event = ended) -> None:
            await reader.readline()  # "stop", or EOF: the runner wants the load to end
            if not ended.is_set():
                stop.set()

        watcher = asyncio.create_task(watch())
        try:
            await generate(plan, emit, stop)
        finally:
            ended.set()
        watcher.cancel()  # before any await: the next line stays for the next plan
        await asyncio.gather(watcher, return_exceptions=True)


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
