"""The Go generator and the Python one report no percentile of their own: each ends a plan with its
elapsed time and CPU only, so every latency figure from either is
grpc_resilience_mesh.loadgen.percentile over the same records, one definition whichever generator
ran. Should a generator start summarising latencies, this fails until its figure is checked against
that definition."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import grpc
import pytest

from grpc_resilience_mesh.loadgen.outcomes import LoadResult, outcome_of
from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.loadgen.plans import plan_for
from grpc_resilience_mesh.loadgen.protocol import decode
from grpc_resilience_mesh.services.v1 import gateway_pb2
from tests.integration.loadgen.fake_gateway import serving
from tests.support.peers import peer_binary

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def gateway() -> AsyncIterator[str]:
    delays = iter([0.0, 0.03, 0.01, 0.05, 0.02] * 4)

    async def home(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        await asyncio.sleep(next(delays, 0.0))
        return bytes(gateway_pb2.GetHomeResponse().SerializeToString())

    async with serving({"GetHome": home}) as address:
        yield address


async def summary_and_result(
    command: list[str], address: str
) -> tuple[dict[str, object], LoadResult]:
    """One plan through a generator process, spoken to on the wire protocol."""
    plan = plan_for(address, 20, concurrency=1)
    proc = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    result = LoadResult()
    try:
        proc.stdin.write(plan.dumps().encode() + b"\n")
        await proc.stdin.drain()
        while True:
            kind, body = decode((await asyncio.wait_for(proc.stdout.readline(), 30)).decode())
            if kind == "E":
                break
            result.outcomes += [outcome_of(plan, record) for record in body]
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return body, result


@pytest.mark.parametrize("kind", ["python", "go"])
async def test_a_generator_ends_with_no_latency_summary_of_its_own(kind: str, gateway: str) -> None:
    if kind == "go":
        command = [str(peer_binary("mesh-loadgen"))]  # skips when `make peers` did not build it
    else:
        command = [sys.executable, "-m", "grpc_resilience_mesh.loadgen.generator"]
    summary, result = await summary_and_result(command, gateway)
    assert set(summary) == {"elapsed_s", "cpu_s"}
    latencies = [o.latency_s * 1000 for o in result.outcomes]
    assert len(latencies) == 20
    assert result.latency_ms(99) == percentile(latencies, 99) == max(latencies)
    assert result.latency_ms(50) in latencies
