"""The kv example's client retries a call whose connection the proxy resets, and succeeds."""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio
import pytest

from examples.kv import kv_pb2, kv_pb2_grpc
from examples.kv.client import kv_channel
from examples.kv.store import KeyValueStore
from grpc_aio_resilience import (
    CallFinished,
    DeadlinePolicy,
    EdgePolicy,
    Event,
    EventBus,
    RetryScheduled,
)
from tests.examples.kv_harness import Recorder, kv_serving, proxy, toxiproxy

pytestmark = pytest.mark.timeout(30)

POLICY = EdgePolicy(deadline=DeadlinePolicy(total_s=6.0, attempt_s=2.0))
"""Three attempts (the default), each long enough to wait out a reconnect's backoff (at most
1.2 s on a channel of the library's)."""
GET = kv_pb2.GetRequest(key="colour")


async def test_a_reset_connection_is_retried_and_the_call_succeeds() -> None:
    store = KeyValueStore()
    store.values["colour"] = "green"
    bus = EventBus()
    seen = Recorder(bus)
    with toxiproxy() as tp:

        def heal(event: Event) -> None:
            # In the listener, so the toxic is gone before the retry's backoff starts: the
            # retry meets a healthy proxy whatever the backoff's jitter drew.
            if len(seen.of(RetryScheduled)) == 1:
                tp.remove_toxic("kv", "reset")

        bus.subscribe(heal, kinds=(RetryScheduled,))
        async with kv_serving(store) as address:
            listen = await proxy(tp, "kv", address)
            async with (
                grpc.aio.insecure_channel(listen) as plain,
                kv_channel(listen, POLICY, bus) as protected,
            ):
                unprotected, kv = (
                    kv_pb2_grpc.KeyValueStub(plain),
                    kv_pb2_grpc.KeyValueStub(protected),
                )
                await unprotected.Get(GET, timeout=5.0)  # both connected before the fault
                await kv.Get(GET, timeout=5.0)
                seen.events.clear()
                reset = {"timeout": 0}  # on the next bytes from the client: a TCP reset
                await asyncio.to_thread(
                    tp.add_toxic, "kv", "reset_peer", "upstream", attributes=reset, name="reset"
                )
                with pytest.raises(grpc.aio.AioRpcError) as raw:
                    await unprotected.Get(GET, timeout=5.0)
                # wait_for_ready: gRPC may reconnect before `heal` has run, meet the reset again
                # and back off; without it the retry then fails at once (2 runs of 4 did).
                reply = await kv.Get(GET, timeout=5.0, wait_for_ready=True)
    # The fault is real: a call without the pipeline fails on it ...
    assert raw.value.code() is grpc.StatusCode.UNAVAILABLE
    # ... and the protected call was retried once, on that code, and answered.
    assert reply.value == "green"
    assert [(e.attempt, e.reason) for e in seen.of(RetryScheduled)] == [(1, "UNAVAILABLE")]
    finished = seen.of(CallFinished)
    assert [(e.method, e.outcome, e.attempts) for e in finished] == [
        ("/kvexample.v1.KeyValue/Get", "OK", 2)
    ]
