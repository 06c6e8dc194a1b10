"""Each stack `grpc_resilience_mesh.bench.counted_overhead` counts runs its calls through what it
names (here natively, without callgrind)."""

from __future__ import annotations

import grpc.aio
import pytest

from grpc_aio_resilience.direct import ResilientChannel
from grpc_resilience_mesh.bench import counted_overhead as co

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("stack", co.STACKS)
async def test_every_stack_answers_its_calls(stack: str) -> None:
    variants, stub = await co._build(stack, concurrency=2)
    try:
        channel = variants.channels[stack]
        assert isinstance(channel, ResilientChannel) == (stack in ("client", "full"))
        assert isinstance(channel, grpc.aio.Channel)
        await co._calls(stub, 6, 2)
    finally:
        await variants.close()
    assert len(variants.servers) == 1


async def test_a_child_run_ends_with_its_servers_stopped() -> None:
    await co.run_child("full", calls=4, concurrency=2)
