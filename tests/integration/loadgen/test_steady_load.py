"""Steady load for as long as wanted (the soak, the console's background load) comes from the
load generator process in bounded plans: every outcome is counted as it streams and none is
kept, the offered rate holds across plans, and stopping ends it and its process."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.console.background_load import BackgroundLoad, LoadSettings
from grpc_resilience_mesh.loadgen.in_process import LoadGenerator, LoadResult, Outcome, plan_for
from grpc_resilience_mesh.loadgen.protocol import Plan
from grpc_resilience_mesh.loadgen.steady import SteadyLoad, run_steady
from grpc_resilience_mesh.services.v1 import gateway_pb2, payment_pb2
from tests.integration.loadgen.fake_gateway import Handler, serving
from tests.support.polling import await_until

pytestmark = pytest.mark.timeout(60)


@dataclass
class FakeGateway:
    """Answers GetHome and Checkout at once, counting calls by method (from any thread)."""

    address: str = ""
    calls: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    callers_here: list[bool] = field(default_factory=list)
    """Per call seen: whether the calling socket was this test process's own."""

    def total(self) -> int:
        with self.lock:
            return self.calls.total()


def socket_is_ours(peer: str) -> bool:
    """Whether the TCP socket at `peer` ("ipv4:127.0.0.1:PORT") is open in this process."""
    port = int(peer.rsplit(":", 1)[1])
    inodes = {
        fields[9]
        for table in ("tcp", "tcp6")  # gRPC's sockets are dual-stack: 127.0.0.1 is in tcp6
        for line in Path("/proc/net", table).read_text().splitlines()[1:]
        if int((fields := line.split())[1].split(":")[1], 16) == port
    }
    assert inodes, f"no socket at {peer}"
    mine = {os.readlink(fd) for fd in Path("/proc/self/fd").iterdir() if fd.is_symlink()}
    return any(f"socket:[{inode}]" in mine for inode in inodes)


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    fake = FakeGateway()

    def handler(rpc: str, reply: bytes) -> Handler:
        async def call(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            with fake.lock:
                fake.calls[rpc] += 1
                if len(fake.callers_here) < 5:
                    fake.callers_here.append(socket_is_ours(context.peer()))
            return reply

        return call

    charged = gateway_pb2.CheckoutResponse(status=payment_pb2.CHARGE_STATUS_SUCCEEDED)
    home = gateway_pb2.GetHomeResponse().SerializeToString()
    handlers = {
        "GetHome": handler("home", home),
        "Checkout": handler("checkout", charged.SerializeToString()),
    }
    async with serving(handlers) as fake.address:
        yield fake


class SpyGenerator(LoadGenerator):
    """The real generator, noting each plan's size and what each stream kept."""

    def __init__(self) -> None:
        super().__init__()
        self.plans: list[int] = []
        self.kept: list[int] = []

    async def stream(
        self, plan: Plan, on_outcome: Callable[[Outcome], None], stop: asyncio.Event | None = None
    ) -> LoadResult:
        self.plans.append(len(plan.requests))
        result = await super().stream(plan, on_outcome, stop)
        self.kept.append(len(result.outcomes))
        return result


async def test_a_long_load_runs_as_bounded_plans_that_keep_no_outcome(
    gateway: FakeGateway,
) -> None:
    codes: Counter[str] = Counter()
    starts: list[float] = []

    def count(outcome: Outcome) -> None:
        codes[f"{outcome.rpc} {outcome.code}"] += 1
        starts.append(outcome.started_s)

    spy = SpyGenerator()
    load = SteadyLoad(gateway.address, 40.0, ("home", "checkout"), duration_s=1.5, chunk_s=0.5)
    try:
        plans = await run_steady(load, count, asyncio.Event(), spy)
    finally:
        await spy.close()

    assert plans == 3 and all(size <= 20 for size in spy.plans), spy.plans
    assert spy.kept == [0, 0, 0]  # streamed to `count`, not held by the generator's driver
    assert codes["home OK"] + codes["checkout OK"] == codes.total() == gateway.total()
    assert codes["checkout OK"] >= 25 and codes["home OK"] >= 25  # 60 offered, over 3 plans
    offered = (len(starts) - 1) / (max(starts) - min(starts))
    assert 25 <= offered <= 50, offered  # the rate held across the plans, not a burst


async def test_stop_ends_a_steady_load_early(gateway: FakeGateway) -> None:
    stop = asyncio.Event()
    seen: list[Outcome] = []

    def count(outcome: Outcome) -> None:
        seen.append(outcome)
        if len(seen) == 10:
            stop.set()
            stopped_at.append(time.perf_counter())

    stopped_at: list[float] = []
    called = time.perf_counter()  # the generator's clock (protocol.py): one in every process
    await run_steady(SteadyLoad(gateway.address, 50.0, chunk_s=30.0), count, stop)
    returned = time.perf_counter()
    took_s = returned - stopped_at[0]
    assert took_s < 3  # not the rest of its 30 s plan, nor forever
    # Only what the 50/s schedule started until the stop reached the generator: an open loop
    # is never ahead of its schedule, which starts after `called`. (Not "10 + one batch": a
    # generator the machine held back starts the calls it is late for at once, and a batch
    # holds the answers of everything in flight; once 32, with 0.15 s answers, stop 0.04 s.)
    assert 10 <= len(seen) <= 50 * (returned - called) + 1, (len(seen), returned - called)
    assert max(o.started_s for o in seen) < returned


async def test_run_still_keeps_every_outcome_of_a_plan(gateway: FakeGateway) -> None:
    generator = LoadGenerator()
    streamed: list[Outcome] = []
    try:
        result = await generator.run(plan_for(gateway.address, 10, concurrency=2), streamed.append)
    finally:
        await generator.close()
    assert [o.code for o in result.outcomes] == ["OK"] * 10 and result.outcomes == streamed


async def test_the_consoles_background_load_counts_across_plans_and_stops(
    gateway: FakeGateway,
) -> None:
    load = BackgroundLoad(gateway.address, api_key=None)
    load.chunk_s = 0.5
    load.start(LoadSettings(rate_per_s=40.0, home=1, checkout=1))
    try:
        await await_until(
            lambda: sum(load.status()["codes"].values()) >= 50, 20, "50 calls counted"
        )
    finally:
        await asyncio.to_thread(load.stop)
    assert load.status() == {"running": False}
    # The calls came from the generator process, not the console's own (its CPU stays its own).
    assert gateway.callers_here == [False] * 5
    sent = gateway.total()
    assert sent >= 50
    await asyncio.sleep(0.5)
    assert gateway.total() == sent  # stopped: no call after stop() returned
