"""The library's server side as a user mounts it: `server_interceptors(...)` (or one of them
alone) in a plain `grpc.aio.server(interceptors=...)`, or run as one chain past grpc.aio's
interceptor API (`protect_server`), which must answer alike; around a service of bytes in and
bytes out, nothing of the mesh. Past the limit a call is refused with pushback, a deadline
shorter than the learnt service time is refused when the policy says so, a Vegas limit moves
under load, a stalled stream gives its place to a new one, and health checks are never
refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grpc_aio_resilience import (
    EXEMPT_PREFIXES,
    CallShed,
    ConcurrencyLimitChanged,
    Event,
    EventBus,
    LimitPolicy,
    ServerCallFinished,
    ServerLayer,
    ServerPolicy,
    SheddingInterceptor,
    StreamExpired,
    VegasPolicy,
    protect_server,
    server_interceptors,
)
from tests.integration.hardening.stalled_h2 import stall
from tests.support.polling import await_until

SERVICE = "kvtest.v1.Kv"
GET, WATCH, ADMIN = f"/{SERVICE}/Get", f"/{SERVICE}/Watch", "/kvtest.v1.Admin/Dump"
PUSHBACK = "grpc-retry-pushback-ms"


class Kv:
    """Get sleeps `service_s`, or holds until `release` is set; Watch sends one message and
    holds (b"hold"), or sends 64 KiB messages for as long as its reader takes them."""

    def __init__(self, service_s: float = 0.0, hold: bool = False) -> None:
        self.service_s = service_s
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.entered = 0

    async def get(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.entered += 1
        await self.release.wait()
        await asyncio.sleep(self.service_s)
        return request

    async def watch(
        self, request: bytes, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        yield b"first"
        if request == b"hold":
            await asyncio.Event().wait()
        while True:
            yield bytes(65536)

    def register(self, server: grpc.aio.Server) -> None:
        handlers = {
            "Get": grpc.unary_unary_rpc_method_handler(self.get),
            "Watch": grpc.unary_stream_rpc_method_handler(self.watch),
        }
        admin = {"Dump": grpc.unary_unary_rpc_method_handler(self.get)}
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(SERVICE, handlers),
                grpc.method_handlers_generic_handler("kvtest.v1.Admin", admin),
            )
        )
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)


@pytest.fixture(params=["interceptors", "protect_server"])
def mount(request: pytest.FixtureRequest) -> str:
    """How the layers are mounted: as grpc.aio interceptors, or by protect_server."""
    return str(request.param)


@asynccontextmanager
async def serving(
    kv: Kv, layers: Sequence[SheddingInterceptor | ServerLayer], mount: str = "interceptors"
) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to a started plain grpc.aio server with `layers` mounted as `mount` says."""
    if mount == "protect_server":
        server: grpc.aio.Server = protect_server(grpc.aio.server(), list(layers))
    else:
        server = grpc.aio.server(interceptors=list(layers))
    kv.register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        await server.stop(None)


async def outcome(call: grpc.aio.UnaryUnaryCall) -> tuple[grpc.StatusCode, dict[str, str]]:
    code = await call.code()
    return code, {k: str(v) for k, v in await call.trailing_metadata() or ()}


def listening() -> tuple[EventBus, list[Event]]:
    bus, events = EventBus(), list[Event]()
    bus.subscribe(events.append)
    return bus, events


@pytest.mark.parametrize("layers", ["server_interceptors", "shedding alone"])
async def test_past_the_limit_a_call_is_refused_with_pushback(layers: str, mount: str) -> None:
    bus, events = listening()
    policy = ServerPolicy(max_in_flight=2, shed_pushback_ms=150)
    interceptors = (
        server_interceptors("kv", policy, bus)
        if layers == "server_interceptors"
        else [SheddingInterceptor("kv", policy, bus)]
    )
    kv = Kv(hold=True)
    async with serving(kv, interceptors, mount) as channel:
        get = channel.unary_unary(GET)
        held = [get(b"k", timeout=10) for _ in range(2)]
        await await_until(lambda: kv.entered == 2, what="two calls in flight")
        refused = await outcome(get(b"k", timeout=10))
        checked = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        kv.release.set()
        assert [await call for call in held] == [b"k", b"k"]
    assert refused[0] is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused[1][PUSHBACK] == "150"
    assert checked.status == health_pb2.HealthCheckResponse.SERVING
    assert [(e.method, e.reason) for e in events if isinstance(e, CallShed)] == [(GET, "limit")]
    counted = sorted(
        e.code for e in events if isinstance(e, ServerCallFinished) and e.method == GET
    )
    if layers == "server_interceptors":  # counted outside admission: the refusal too
        assert counted == ["OK", "OK", "RESOURCE_EXHAUSTED"]
    else:
        assert counted == []


async def test_a_policy_swapped_at_runtime_holds_for_the_next_calls_without_a_bus(
    mount: str,
) -> None:
    interceptors = server_interceptors("kv", ServerPolicy(max_in_flight=4))
    kv = Kv(hold=True)
    async with serving(kv, interceptors, mount) as channel:
        get = channel.unary_unary(GET)
        kv.release.set()
        assert await get(b"before", timeout=10) == b"before"  # the method's handler wrapped
        kv.release.clear()
        interceptors.update(ServerPolicy(max_in_flight=1, shed_pushback_ms=70))
        held = get(b"k", timeout=10)
        await await_until(lambda: kv.entered == 2, what="the one place taken")
        refused = await outcome(get(b"k", timeout=10))
        kv.release.set()
        assert await held == b"k"
    assert refused[0] is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused[1][PUSHBACK] == "70"  # the swapped policy's, not the default 200


@pytest.mark.parametrize("deadline_aware", [True, False])
async def test_a_deadline_shorter_than_the_learnt_service_time_is_refused(
    deadline_aware: bool, mount: str
) -> None:
    bus, events = listening()
    policy = ServerPolicy(max_in_flight=0, limit=LimitPolicy(deadline_aware=deadline_aware))
    # The short call must reach the server with time left: at 0.5 s / 0.3 s a loaded runner's
    # event loop once used up the 0.3 s in transit (DEADLINE_EXCEEDED before any layer ran).
    kv = Kv(service_s=1.2)
    async with serving(kv, server_interceptors("kv", policy, bus), mount) as channel:
        get = channel.unary_unary(GET)
        assert await get(b"learn", timeout=10) == b"learn"  # 1.2 s, learnt
        code, trailers = await outcome(get(b"short", timeout=0.8))
    shed = [e for e in events if isinstance(e, CallShed)]
    if deadline_aware:
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert trailers["resilience-caller-deadline"] == "deadline"
        assert [e.reason for e in shed] == ["deadline"]
        assert shed[0].expected_s >= 1.2 > shed[0].deadline_left_s
        assert kv.entered == 1  # the handler never saw the short call
    else:
        assert code is grpc.StatusCode.DEADLINE_EXCEEDED
        assert shed == []
        assert kv.entered == 2


async def test_a_vegas_limit_moves_under_load() -> None:
    bus, events = listening()
    vegas = VegasPolicy(initial_limit=4, max_concurrency=64)
    policy = ServerPolicy(limit=LimitPolicy(algorithm="vegas", vegas=vegas))
    kv = Kv(service_s=0.05)

    def limits() -> list[int]:
        return [e.limit for e in events if isinstance(e, ConcurrencyLimitChanged)]

    async with serving(kv, server_interceptors("kv", policy, bus)) as channel:
        get = channel.unary_unary(GET)
        codes: list[grpc.StatusCode] = []
        for _ in range(50):  # waves of 8 callers against a limit of 4, until it moves
            codes += [await call.code() for call in [get(b"k", timeout=10) for _ in range(8)]]
            if max(limits()) > 4:
                break
    assert limits()[0] == 4
    assert max(limits()) > 4, limits()
    assert {e.algorithm for e in events if isinstance(e, ConcurrencyLimitChanged)} == {"vegas"}
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes  # 8 callers were over the first limit


async def test_a_stream_over_the_limit_is_refused_while_the_others_read(mount: str) -> None:
    bus, events = listening()
    policy = ServerPolicy(max_streams_in_flight=1, shed_pushback_ms=100)
    async with serving(Kv(), server_interceptors("kv", policy, bus), mount) as channel:
        watch = channel.unary_stream(WATCH)
        holding = watch(b"hold", timeout=10)
        assert await holding.read() == b"first"
        over = watch(b"hold", timeout=10)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await over.read()
        holding.cancel()
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert dict(refused.value.trailing_metadata() or ())[PUSHBACK] == "100"
    assert [e.reason for e in events if isinstance(e, CallShed)] == ["limit"]


async def test_a_stalled_reader_gives_its_place_to_a_new_stream(mount: str) -> None:
    bus, events = listening()
    policy = ServerPolicy(max_streams_in_flight=1, stream_write_timeout_s=60)
    layers = list(server_interceptors("kv", policy, bus))
    if mount == "protect_server":
        server: grpc.aio.Server = protect_server(grpc.aio.server(), layers)
    else:
        server = grpc.aio.server(interceptors=layers)
    Kv().register(server)
    target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    stalled = await stall(target, WATCH, b"flood", 1, grpc_timeout="3600S")
    try:
        async with grpc.aio.insecure_channel(target) as channel:
            watch = channel.unary_stream(WATCH)

            async def admitted() -> bytes | None:
                """A new stream's first message, or None while it is refused."""
                call = watch(b"hold", timeout=10)
                try:
                    message: bytes = await call.read()
                    return message
                except grpc.aio.AioRpcError as err:
                    assert err.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                    return None
                finally:
                    call.cancel()

            first = await await_until(admitted, timeout_s=10, what="a new stream admitted")
    finally:
        await stalled.close()
        await server.stop(None)
    assert first == b"first"
    expired = [e.reason for e in events if isinstance(e, StreamExpired)]
    assert len(expired) == 1 and expired[0].endswith("a new stream took its place"), expired


@pytest.mark.parametrize("exempt", [(), ("/kvtest.v1.Admin/",)])
async def test_health_and_the_methods_named_exempt_are_never_refused(
    exempt: tuple[str, ...], mount: str
) -> None:
    bus, events = listening()
    policy = ServerPolicy(max_in_flight=1)
    kv = Kv(hold=True)
    interceptors = server_interceptors("kv", policy, bus, exempt=(*EXEMPT_PREFIXES, *exempt))
    async with serving(kv, interceptors, mount) as channel:
        held = channel.unary_unary(GET)(b"k", timeout=10)
        await await_until(lambda: kv.entered == 1, what="the one place taken")
        checked = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        admin = channel.unary_unary(ADMIN)(b"dump", timeout=10)
        await await_until(lambda: kv.entered == 2 or admin.done(), what="the admin call answered")
        kv.release.set()
        codes = (await held.code(), await admin.code())
    assert checked.status == health_pb2.HealthCheckResponse.SERVING
    if exempt:
        assert codes == (grpc.StatusCode.OK, grpc.StatusCode.OK)
        assert [e for e in events if isinstance(e, CallShed)] == []
    else:  # health is exempt by default, a server's own admin surface only when named
        assert codes == (grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert [e.method for e in events if isinstance(e, CallShed)] == [ADMIN]
