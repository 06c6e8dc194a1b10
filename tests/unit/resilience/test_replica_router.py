"""The ReplicaRouter on fake replica channels and a fake clock: the rotation it keeps between
changes (ejection, return, the detector's interval, connectivity, a policy swap) and the one
interceptor a channel over replicas is built with."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.channel import replica_router, resilient_channel, router_of
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus, ReplicaEjected, ReplicaReturned
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.outlier_router import ReplicaRouter
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.v1 import profile_pb2
from tests.support.fake_clock import FakeClock
from tests.unit.resilience.unit_fakes import GET_PROFILE, FakeCall, recording_bus, rpc_error

DETAILS = grpc.aio.ClientCallDetails(GET_PROFILE.encode(), None, None, None, None)


class FakeReplica:
    """A replica's channel: each call answers at once (UNAVAILABLE while `failing`), and its
    connectivity is whatever the test sets."""

    def __init__(self, address: str, log: list[str]) -> None:
        self.address = address
        self.log = log
        self.failing = False
        self.state = grpc.ChannelConnectivity.READY
        self.state_reads = 0
        self._changed = asyncio.Event()

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        self.state_reads += 1
        return self.state

    def set_state(self, state: grpc.ChannelConnectivity) -> None:
        self.state = state
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for_state_change(self, last: grpc.ChannelConnectivity) -> None:
        while self.state == last:
            await self._changed.wait()

    def unary_unary(self, method: str, **_: Any) -> Any:
        def start(request: Any, **__: Any) -> FakeCall:
            self.log.append(self.address)
            if self.failing:
                return FakeCall(None, rpc_error(grpc.StatusCode.UNAVAILABLE))
            return FakeCall(profile_pb2.GetProfileResponse(), None)

        return start

    async def close(self) -> None:
        self.set_state(grpc.ChannelConnectivity.SHUTDOWN)


class Setup:
    def __init__(self, names: str = "ab", **outlier: Any) -> None:
        self.clock = FakeClock()
        self.log: list[str] = []
        self.replicas = {n: FakeReplica(n, self.log) for n in names}
        bus, self.events = recording_bus()
        self.router = ReplicaRouter(
            "profile",
            list(names),
            self.replicas.__getitem__,
            OutlierPolicy(enabled=True, **outlier),
            bus,
            self.clock,
        )

    async def send(self, request: Any = None) -> str:
        """One attempt (of a new call unless `request` is a call's own); where it went."""
        await self.router.send(DETAILS, request or profile_pb2.GetProfileRequest(user_id="u1"))
        return self.log[-1]

    async def settle(self) -> None:
        """Lets the connectivity watchers see what the test just set."""
        for _ in range(5):
            await asyncio.sleep(0)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


async def test_the_rotation_is_not_worked_out_again_per_attempt() -> None:
    s = Setup()
    await s.send()
    await s.send()
    await s.settle()  # both channels made, their watchers started
    await s.send()  # the rotation worked out with both connections' state
    reads = sum(r.state_reads for r in s.replicas.values())
    sent = [await s.send() for _ in range(40)]
    assert Counter(sent) == {"a": 20, "b": 20}
    assert all(x != y for x, y in itertools.pairwise(sent))
    # Nothing changed: no connectivity was read for any of the 40 picks.
    assert sum(r.state_reads for r in s.replicas.values()) == reads
    await s.router.close()


async def test_an_ejection_takes_the_replica_out_at_once_and_it_returns_on_time() -> None:
    s = Setup(consecutive_failures=2, base_ejection_s=5.0, interval_s=100.0)
    s.replicas["a"].failing = True
    sent = [await s.send() for _ in range(4)]
    assert sent.count("a") == 2
    assert [(e.replica, e.reason) for e in s.of(ReplicaEjected)] == [("a", "consecutive_failures")]
    assert {await s.send() for _ in range(10)} == {"b"}
    s.clock.advance(4.99)
    assert {await s.send() for _ in range(4)} == {"b"}
    s.clock.advance(0.01)
    assert {await s.send() for _ in range(2)} == {"a", "b"}
    assert [e.replica for e in s.of(ReplicaReturned)] == ["a"]
    await s.router.close()


async def test_failure_percentage_is_judged_when_the_interval_ends() -> None:
    s = Setup(
        consecutive_failures=1000,
        failure_percentage=50.0,
        request_volume=4,
        minimum_hosts=1,
        interval_s=1.0,
    )
    s.replicas["a"].failing = True
    sent = [await s.send() for _ in range(10)]
    assert sent.count("a") == 5 and s.of(ReplicaEjected) == []
    s.clock.advance(1.0)
    assert await s.send() == "b"  # the interval ended: judged before this pick
    assert [(e.replica, e.reason) for e in s.of(ReplicaEjected)] == [("a", "failure_percentage")]
    assert {await s.send() for _ in range(6)} == {"b"}
    await s.router.close()


async def test_a_replica_whose_connection_fails_leaves_the_rotation_until_it_is_back() -> None:
    s = Setup()
    await s.send()
    await s.send()
    s.replicas["a"].set_state(grpc.ChannelConnectivity.TRANSIENT_FAILURE)
    await s.settle()
    assert {await s.send() for _ in range(6)} == {"b"}
    s.replicas["a"].set_state(grpc.ChannelConnectivity.READY)
    await s.settle()
    assert Counter([await s.send() for _ in range(6)]) == {"a": 3, "b": 3}
    await s.router.close()


async def test_a_retry_avoids_the_replica_its_call_failed_on() -> None:
    s = Setup("abc", consecutive_failures=1000)
    s.replicas["b"].failing = True
    failed = profile_pb2.GetProfileRequest(user_id="u1")
    assert await s.send(failed) == "b"
    assert [await s.send(), await s.send()] == ["c", "a"]
    # The rotation is at b again; this call's retry goes elsewhere.
    assert await s.send(failed) == "a"
    await s.router.close()


async def test_a_policy_swap_puts_every_replica_back_in_rotation_at_once() -> None:
    s = Setup(consecutive_failures=1, base_ejection_s=30.0)
    s.replicas["a"].failing = True
    while not s.of(ReplicaEjected):
        await s.send()
    assert {await s.send() for _ in range(4)} == {"b"}
    s.router.use(OutlierPolicy(enabled=False))
    assert {await s.send() for _ in range(2)} == {"a", "b"}
    await s.router.close()


async def test_a_channel_over_replicas_has_one_interceptor_the_router_behind_it() -> None:
    """The router is called in place of gRPC's continuation: no interceptor layer of its own,
    for unary calls or streams, whether gRPC balances (ejection off) or the router does."""
    bus = recording_bus()[0]
    for target, ejection in [
        ("127.0.0.1:1,127.0.0.1:2", True),
        ("127.0.0.1:1,127.0.0.1:2", False),
        ("localhost:1,localhost:2", False),
    ]:
        pipeline = build_pipeline(EdgePolicy(), dependency="profile", bus=bus)
        interceptor = ResilienceInterceptor(pipeline, dependency="profile", clock=FakeClock())
        channel = resilient_channel(
            target, interceptor, outlier=OutlierPolicy(enabled=ejection), bus=bus
        )
        router = replica_router(channel)
        try:
            assert channel.interceptor is interceptor  # unary calls: past the interceptor API
            assert channel.wrapped._unary_unary_interceptors == []
            assert len(channel.wrapped._unary_stream_interceptors) == 1
            assert router is not None and router_of(interceptor) is router
            # gRPC's round_robin balances an `ipv4:` target while ejection is off.
            assert router.routes is (ejection or target.startswith("localhost"))
        finally:
            await router.close() if router is not None else None
            await channel.close()


def test_hedged_calls_first_attempts_still_take_turns() -> None:
    """A hedge goes to a replica its call has not used, without moving the rotation on: with
    two replicas, calls that all hedge start on each in turn (before: always on the same one,
    so with one replica slow every call hedged and paid for it from the retry budget)."""
    router = ReplicaRouter(
        "profile", ["a", "b"], lambda address: None, OutlierPolicy(), EventBus(), FakeClock()
    )
    firsts = []
    for _ in range(6):
        taken: set[str] = set()
        firsts.append(router.pick_apart(taken))
        assert router.pick_apart(taken) != firsts[-1]  # the hedge: the other replica
    assert firsts == ["b", "a", "b", "a", "b", "a"]
