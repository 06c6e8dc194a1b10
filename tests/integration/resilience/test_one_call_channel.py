"""`insecure_channel(target, policy)`: a protected channel in one call, for a service that is not
the mesh's (trapdemo.v1.Ledger, raw bytes on the wire): the pipeline runs (a transient failure
is retried, and the retry is an event on the bus given), and `pipeline_of` finds it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

import grpc_aio_resilience as resilience
from tests.unit.resilience import trap_proto


@pytest.fixture
async def ledger() -> AsyncIterator[tuple[str, list[str]]]:
    """A Ledger whose Get fails UNAVAILABLE once, then answers; its calls in `seen`."""
    seen: list[str] = []

    async def get(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        seen.append("get")
        if len(seen) == 1:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return request

    handler = grpc.method_handlers_generic_handler(
        trap_proto.SERVICE, {"Get": grpc.unary_unary_rpc_method_handler(get)}
    )
    server = grpc.aio.server(handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}", seen
    finally:
        await server.stop(None)


async def test_a_transient_failure_is_retried(ledger: tuple[str, list[str]]) -> None:
    target, seen = ledger
    bus = resilience.EventBus()
    retries: list[resilience.Event] = []
    bus.subscribe(retries.append, kinds=(resilience.RetryScheduled,))
    service = trap_proto.register()
    channel = resilience.insecure_channel(target, services=(service,), bus=bus)
    try:
        reply = await channel.unary_unary(trap_proto.GET)(b"entry-1", timeout=5)
    finally:
        await channel.close()
    assert reply == b"entry-1"
    assert seen == ["get", "get"]
    assert len(retries) == 1
    assert resilience.describe(resilience.pipeline_of(channel)).strategy("retry") is not None


async def test_pipeline_of_refuses_a_channel_it_did_not_make() -> None:
    channel = grpc.aio.insecure_channel("127.0.0.1:1")
    try:
        with pytest.raises(KeyError):
            resilience.pipeline_of(channel)
    finally:
        await channel.close()


async def test_a_trap_is_warned_at_the_callers_line() -> None:
    """Built through insecure_channel, the trap points at the line that called it (as
    build_pipeline's do), not inside the library."""
    service = trap_proto.register()
    with pytest.warns(resilience.ResiliencePolicyWarning) as caught:
        channel = resilience.insecure_channel(
            "127.0.0.1:1", services=(service,), dependency="trap-line"
        )
    await channel.close()
    assert {w.filename for w in caught} == {__file__}
