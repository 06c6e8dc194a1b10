"""A bounded load of one method: closed loop (`concurrency` workers) or open loop (calls
started on schedule at `rate_per_s`, at most `concurrency` in flight), every call's outcome
recorded as the caller saw it."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
from google.protobuf.message import Message

from grpc_resilience_mesh.loadgen.any_method.method import MethodInfo
from grpc_resilience_mesh.loadgen.any_method.templating import Metadata
from grpc_resilience_mesh.loadgen.any_method.traceparent import with_traceparent

# One retry owner: whatever the target's service config says, a load call is one attempt.
CHANNEL_OPTIONS = (("grpc.enable_retries", 0),)


@dataclass(frozen=True)
class CallRecord:
    """One call as the caller saw it."""

    index: int
    started_s: float
    """time.monotonic() when it was sent (or, dropped, when it was due)."""
    latency_s: float
    """To its status: for server streaming, to the end of the stream."""
    code: str
    """A grpc.StatusCode name ("OK"), or "CLIENT_DROPPED": the open loop had no free slot."""
    messages: int
    """Responses received: 1 for a unary OK, every message of a stream (even a failed one)."""
    detail: str
    trace_id: str = ""
    """The W3C trace id the call was sent with; "" for a call never sent, or one whose own
    traceparent a receiver would not continue."""


@dataclass(frozen=True)
class LoadShape:
    """How much load and how: a closed loop unless `rate_per_s` is set."""

    requests: int
    concurrency: int
    deadline_s: float
    max_duration_s: float
    """No call starts after this; those in flight then end by their deadline."""
    rate_per_s: float | None = None

    def __post_init__(self) -> None:
        if self.requests < 0 or self.concurrency < 1:
            raise ValueError(f"{self}: requests >= 0 and concurrency >= 1 expected")
        if self.deadline_s <= 0 or self.max_duration_s <= 0:
            raise ValueError(f"{self}: deadline_s and max_duration_s must be > 0")
        if self.rate_per_s is not None and self.rate_per_s <= 0:
            raise ValueError(f"{self}: rate_per_s must be > 0 (or None: closed loop)")


async def run_load(
    target: str,
    info: MethodInfo,
    calls: Sequence[tuple[Message, Metadata]],
    shape: LoadShape,
    on_record: Callable[[CallRecord], None] | None = None,
    stop: asyncio.Event | None = None,
) -> list[CallRecord]:
    """Send `shape.requests` calls of `info` to `target`, the i-th with `calls[i % len(calls)]`,
    and return their records by index. Setting `stop` ends it at once: no call starts, those
    in flight are cancelled and recorded CANCELLED. `on_record` sees each record as it ends."""
    if not calls and shape.requests:
        raise ValueError("run_load: no calls to send")
    stop = stop or asyncio.Event()
    async with grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS) as channel:
        load = _Load(channel, info, calls, shape, on_record)
        main = asyncio.create_task(
            load.closed_loop() if shape.rate_per_s is None else load.open_loop(shape.rate_per_s)
        )
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({main, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            await load.cancel(main)
        if not main.cancelled():
            main.result()
    return sorted(load.records, key=lambda record: record.index)


class _Load:
    def __init__(
        self,
        channel: grpc.aio.Channel,
        info: MethodInfo,
        calls: Sequence[tuple[Message, Metadata]],
        shape: LoadShape,
        on_record: Callable[[CallRecord], None] | None,
    ) -> None:
        opener = channel.unary_stream if info.server_streaming else channel.unary_unary
        self.invoke = opener(
            info.full_name,
            request_serializer=info.request_type.SerializeToString,
            response_deserializer=info.response_type.FromString,
        )
        self.streaming = info.server_streaming
        self.calls = calls
        self.shape = shape
        self.on_record = on_record
        self.records: list[CallRecord] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.end_s = time.monotonic() + shape.max_duration_s

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def cancel(self, main: asyncio.Task[None]) -> None:
        """Cancel what still runs and wait for it: each cancelled call records itself."""
        pending = [task for task in (main, *self.tasks) if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def record(self, record: CallRecord) -> None:
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)

    async def closed_loop(self) -> None:
        counter = itertools.count()

        async def worker() -> None:
            while (i := next(counter)) < self.shape.requests and time.monotonic() < self.end_s:
                await self.call(i)

        for _ in range(min(self.shape.concurrency, self.shape.requests)):
            self.spawn(worker())
        await asyncio.gather(*self.tasks)

    async def open_loop(self, rate_per_s: float) -> None:
        start_s = time.monotonic()
        in_flight: set[asyncio.Task[None]] = set()
        for i in range(self.shape.requests):
            due_s = start_s + i / rate_per_s
            if due_s >= self.end_s:
                break
            # Every arrival yields, even one behind schedule: a loop that never awaits would
            # starve the guard's checks and see `stop` only once it had caught up.
            await asyncio.sleep(max(0.0, due_s - time.monotonic()))
            if len(in_flight) >= self.shape.concurrency:
                detail = f"{self.shape.concurrency} calls in flight"
                self.record(CallRecord(i, time.monotonic(), 0.0, "CLIENT_DROPPED", 0, detail))
                continue
            task = asyncio.create_task(self.call(i))
            for owner in (in_flight, self.tasks):
                owner.add(task)
                task.add_done_callback(owner.discard)
        await asyncio.gather(*in_flight)

    async def call(self, index: int) -> None:
        request, metadata = self.calls[index % len(self.calls)]
        trace_id, metadata = with_traceparent(metadata)
        started_s = time.monotonic()
        call = self.invoke(request, timeout=self.shape.deadline_s, metadata=metadata)
        messages, code, detail = 0, "OK", ""
        try:
            if self.streaming:
                async for _ in call:
                    messages += 1
            else:
                await call
                messages = 1
        except grpc.aio.AioRpcError as exc:
            code, detail = exc.code().name, exc.details() or ""
        except asyncio.CancelledError:
            call.cancel()
            latency_s = time.monotonic() - started_s
            code, detail = "CANCELLED", "stopped"
            self.record(CallRecord(index, started_s, latency_s, code, messages, detail, trace_id))
            raise
        except Exception as exc:  # a response this message class cannot decode, and the like
            code, detail = "UNKNOWN", f"{type(exc).__name__}: {exc}"
        latency_s = time.monotonic() - started_s
        self.record(CallRecord(index, started_s, latency_s, code, messages, detail, trace_id))
