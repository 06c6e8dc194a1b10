"""Span export never runs on the event loop's thread: a stuck span file cannot stall calls.

A server traced with the default JSON-lines processor whose file write hangs keeps answering;
the hung write is on the writer thread, spans past the queue bound are dropped and counted,
and once the write comes back everything still queued reaches the file.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc.aio
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from grpc_resilience_mesh.client.traces import load_spans
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing, server_tracing
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import (
    JsonLinesSpanExporter,
    JsonLinesSpanProcessor,
)
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.support.polling import await_until

QUEUE = 50
CALLS = 300
Traced = tuple["profile_pb2_grpc.ProfileServiceStub", "_StuckExporter", JsonLinesSpanProcessor]


class _Profile(profile_pb2_grpc.ProfileServiceServicer):
    async def GetProfile(self, request: Any, context: Any) -> profile_pb2.GetProfileResponse:
        return profile_pb2.GetProfileResponse(profile=profile_pb2.Profile(user_id="u1"))


class _StuckExporter(JsonLinesSpanExporter):
    """Its first write hangs until released; records the thread every write ran on."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: set[int] = set()

    def write_text(self, text: str) -> bool:
        self.threads.add(threading.get_ident())
        self.entered.set()
        self.release.wait(60)
        return super().write_text(text)


@pytest.fixture
async def traced(
    tmp_path: Path,
) -> AsyncIterator[
    tuple[profile_pb2_grpc.ProfileServiceStub, _StuckExporter, JsonLinesSpanProcessor]
]:
    exporter = _StuckExporter(tmp_path / "profile.jsonl")
    processor = JsonLinesSpanProcessor(exporter, delay_s=0.01, max_queue=QUEUE)
    provider = TracerProvider(resource=Resource.create({"service.name": "profile"}))
    provider.add_span_processor(processor)
    server = grpc.aio.server(interceptors=server_tracing(MeshTracing(provider)))
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(_Profile(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield profile_pb2_grpc.ProfileServiceStub(channel), exporter, processor
    finally:
        exporter.release.set()
        await channel.close()
        await server.stop(None)
        await asyncio.to_thread(provider.shutdown)


async def test_a_hung_span_write_does_not_stall_calls(traced: Traced) -> None:
    stub, exporter, processor = traced
    request = profile_pb2.GetProfileRequest(user_id="u1")
    await stub.GetProfile(request, timeout=5)
    await await_until(exporter.entered.is_set, timeout_s=10.0, what="the span write started")

    loop_thread = threading.get_ident()
    worst_gap_s = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal worst_gap_s
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.monotonic()
            worst_gap_s = max(worst_gap_s, now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    for _ in range(CALLS):  # one after another: each span has ended before the next call
        await asyncio.wait_for(stub.GetProfile(request, timeout=5), timeout=10)
    done.set()
    await ticking

    assert exporter.entered.is_set() and not exporter.release.is_set()  # still hung
    assert loop_thread not in exporter.threads
    # Generous: a stalled loop would show seconds (the write hangs for up to 60 s).
    assert worst_gap_s < 1.0
    assert processor.dropped == CALLS - QUEUE

    exporter.release.set()
    assert await asyncio.to_thread(processor.force_flush, 10_000)
    spans = load_spans([exporter.path])
    assert len(spans) == 1 + QUEUE
    assert {s["name"] for s in spans} == {"Recv.mesh.v1.ProfileService.GetProfile"}
