"""The load generator process against a real grpc.aio server on 127.0.0.1: it offers the
declared open-loop rate, reports every request (code, degraded parts, trace id) and its own
CPU, stops when told, and serves one plan after another from the same process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from grpc_resilience_mesh.loadgen.in_process import LoadGenerator, Outcome, plan_for
from grpc_resilience_mesh.services.v1 import gateway_pb2

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[str, list[str]]]:
    """A Gateway that answers GetHome degraded and records each call's traceparent."""
    seen: list[str] = []

    async def home(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        seen.append(dict(context.invocation_metadata() or ()).get("traceparent", ""))
        reply = gateway_pb2.GetHomeResponse()
        reply.degraded.add(part="recommendations", served_by="popular")
        return bytes(reply.SerializeToString())

    handler = grpc.method_handlers_generic_handler(
        "mesh.v1.Gateway", {"GetHome": grpc.unary_unary_rpc_method_handler(home)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}", seen
    finally:
        await server.stop(None)


async def test_it_offers_the_declared_rate_and_reports_its_cpu(
    gateway: tuple[str, list[str]],
) -> None:
    address, seen = gateway
    plan = plan_for(address, 100, concurrency=100, rate_per_s=100.0)  # room: none dropped
    generator = LoadGenerator()
    try:
        result = await generator.run(plan)
    finally:
        await generator.close()
    assert [o.code for o in result.outcomes] == ["OK"] * 100
    starts = sorted(o.started_s for o in result.outcomes)
    offered = (len(starts) - 1) / (starts[-1] - starts[0])
    assert 80 <= offered <= 110  # a schedule of 100/s, not as fast as the server answers
    assert 0.9 <= result.elapsed_s < 5
    assert all(o.degraded == ("recommendations:popular",) for o in result.outcomes)
    assert {o.trace_id for o in result.outcomes} == {r.trace_id for r in plan.requests}
    assert all(any(o.trace_id in t for t in seen) for o in result.outcomes[:5])
    assert result.generator_cpu_s is not None and result.generator_cpu_s >= 0
    assert result.generator_cpu_s / 100 < 0.005  # generous: well under 5 ms CPU per call


async def test_stop_ends_the_load_and_the_process_serves_the_next_plan(
    gateway: tuple[str, list[str]],
) -> None:
    address, _ = gateway
    generator = LoadGenerator()
    stop = asyncio.Event()
    got: list[Outcome] = []

    def on_outcome(outcome: Outcome) -> None:
        got.append(outcome)
        if len(got) >= 10:
            stop.set()

    try:
        long = plan_for(address, 2000, concurrency=4, rate_per_s=50.0)  # 40 s if not stopped
        first = await asyncio.wait_for(generator.run(long, on_outcome, stop), timeout=20)
        second = await generator.run(plan_for(address, 5, concurrency=2))
    finally:
        await generator.close()
    assert 10 <= len(first.outcomes) < 2000
    assert [o.code for o in second.outcomes] == ["OK"] * 5
