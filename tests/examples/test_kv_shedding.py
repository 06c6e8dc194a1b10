"""The kv example's server sheds a burst past its limit with a pushback, and the example's
client waits at least that pushback before its retry, which the server then admits."""

from __future__ import annotations

import asyncio
import time

import grpc
import grpc.aio
import pytest

from examples.kv import kv_pb2, kv_pb2_grpc
from examples.kv.client import kv_channel
from examples.kv.store import KeyValueStore
from grpc_aio_resilience import (
    BreakerPolicy,
    CallFinished,
    CallShed,
    DeadlinePolicy,
    EdgePolicy,
    EventBus,
    RetryScheduled,
    ServerPolicy,
)
from tests.examples.kv_harness import Recorder, kv_serving, proxy, toxiproxy
from tests.support.polling import await_until

pytestmark = pytest.mark.timeout(30)

LIMIT = 2
BURST = 4
PUSHBACK_MS = 300
SERVER = ServerPolicy(max_in_flight=LIMIT, shed_pushback_ms=PUSHBACK_MS)
CLIENT = EdgePolicy(
    deadline=DeadlinePolicy(total_s=5.0, attempt_s=1.5),
    breaker=BreakerPolicy(enabled=False),  # the sheds are the server's choice, not its failure
)
GET = kv_pb2.GetRequest(key="colour")


class GatedStore(KeyValueStore):
    """Get holds its place at the server until the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.values["colour"] = "green"
        self.gate = asyncio.Event()
        self.entered = 0

    async def Get(
        self, request: kv_pb2.GetRequest, context: grpc.aio.ServicerContext
    ) -> kv_pb2.GetResponse:
        self.entered += 1
        await self.gate.wait()
        return await super().Get(request, context)


async def test_a_burst_is_shed_with_pushback_and_retried_after_it() -> None:
    store = GatedStore()
    client_bus, server_bus = EventBus(), EventBus()
    client, server = Recorder(client_bus), Recorder(server_bus)
    with toxiproxy() as tp:
        async with kv_serving(store, SERVER, server_bus) as address:
            listen = await proxy(tp, "kv", address)
            async with (
                grpc.aio.insecure_channel(listen) as plain,
                kv_channel(listen, CLIENT, client_bus) as protected,
            ):
                kv = kv_pb2_grpc.KeyValueStub(protected)
                started = time.monotonic()
                burst = asyncio.gather(*(kv.Get(GET, timeout=5.0) for _ in range(BURST)))
                # LIMIT calls hold the server's places; the others were shed and wait to retry.
                await await_until(
                    lambda: (
                        store.entered == LIMIT and len(client.of(RetryScheduled)) == BURST - LIMIT
                    ),
                    what="the burst admitted and shed",
                )
                raw = kv_pb2_grpc.KeyValueStub(plain).Get(GET, timeout=5.0)
                raw_code, raw_trailers = await raw.code(), await raw.trailing_metadata()
                store.gate.set()
                replies = await burst
                took_s = time.monotonic() - started
    # A call without the pipeline is refused and told when to come back ...
    assert raw_code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert dict(raw_trailers or ())["grpc-retry-pushback-ms"] == str(PUSHBACK_MS)
    # ... the protected calls shed got the same, waited at least that long, and were answered.
    assert [r.value for r in replies] == ["green"] * BURST
    retries = client.of(RetryScheduled)
    assert {(e.reason, e.pushback_s) for e in retries} == {
        ("RESOURCE_EXHAUSTED", PUSHBACK_MS / 1000)
    }
    assert min(e.delay_s for e in retries) >= PUSHBACK_MS / 1000
    assert took_s >= PUSHBACK_MS / 1000
    assert sorted(e.attempts for e in client.of(CallFinished)) == [1] * LIMIT + [2] * (
        BURST - LIMIT
    )
    assert [e.reason for e in server.of(CallShed)] == ["limit"] * (BURST - LIMIT + 1)
