"""kill -9 payment in the middle of a checkout load: no acknowledged charge lost, none doubled.

Every checkout the gateway acknowledged (SUCCEEDED or DECLINED) must be in the ledger exactly
once under the charge id derived from its key; replaying every charged key with the same
payload must come back `replayed` with the same id and add no row. The ledger file is read
read-only, straight from disk, as the restarted payment process sees it.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.loadgen.in_process import (
    LoadGenerator,
    LoadResult,
    Outcome,
    metadata_for,
    plan_for,
)
from grpc_resilience_mesh.loadgen.protocol import Plan
from grpc_resilience_mesh.services.contracts.charge_ids import charge_id_for
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.support.polling import await_until

pytestmark = pytest.mark.e2e

ACKED = ("SUCCEEDED", "DECLINED")
Row = tuple[str, str, int, str]
"""A ledger row: (charge_id, user_id, amount_cents, currency)."""


@pytest.fixture
def crash_mesh(tmp_path: Path) -> Iterator[Mesh]:
    mesh = Mesh(state_dir=tmp_path / "var", ports=Ports.auto())
    mesh.start()
    try:
        yield mesh
    finally:
        mesh.stop()


def ledger_rows(path: Path) -> dict[str, Row]:
    """idempotency_key -> (charge_id, user_id, amount_cents, currency), read-only."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT idempotency_key, charge_id, user_id, amount_cents, currency FROM charges"
        ).fetchall()
    finally:
        db.close()
    return {key: (cid, user, amount, cur) for key, cid, user, amount, cur in rows}


def checkout_plan(gateway: str, api_key: str | None) -> Plan:
    """Closed-loop checkouts, 8 in flight, 40 s at most (the test stops the load sooner)."""
    return plan_for(
        gateway,
        40_000,
        ("checkout",),
        concurrency=8,
        timeout_s=3.0,
        max_duration_s=40.0,
        api_key=api_key,
    )


async def checkout_load(
    plan: Plan, on_outcome: Callable[[Outcome], None], stop: asyncio.Event
) -> LoadResult:
    """`plan` through the load generator until `stop`."""
    generator = LoadGenerator()
    try:
        return await generator.run(plan, on_outcome, stop)
    finally:
        await generator.close()


class Acks:
    """When each checkout the gateway acknowledged started, as the load reports them."""

    def __init__(self) -> None:
        self.started_s: list[float] = []

    def count(self, outcome: Outcome) -> None:
        if outcome.code == "OK" and outcome.status in ACKED:
            self.started_s.append(outcome.started_s)

    async def until(self, n: int, since_s: float, limit_s: float) -> None:
        """Until `n` checkouts started after `since_s` are acknowledged."""
        # Progress, not a fixed sleep: after the restart the gateway's payment breaker may
        # still be open for its 2 s, and a busy machine makes everything slower.
        await await_until(
            lambda: sum(started > since_s for started in self.started_s) >= n,
            limit_s,
            f"{n} acknowledged checkouts",
            0.05,
        )


async def checkouts_across_a_kill_9(mesh: Mesh) -> tuple[LoadResult, float, float]:
    """Closed-loop checkouts; after 40 acknowledged, payment is killed with SIGKILL and
    restarted, and the load stops after 40 more against the restarted payment. The load, and
    when the kill began and the restart ended (perf_counter, as the outcomes' started_s)."""
    state = mesh.state
    assert state is not None
    acks, stop = Acks(), asyncio.Event()
    killed_at: list[float] = []

    async def crash() -> None:
        await acks.until(40, since_s=0.0, limit_s=15.0)
        killed_at.append(time.perf_counter())
        await asyncio.to_thread(mesh.restart_service, "payment", signal.SIGKILL)
        killed_at.append(time.perf_counter())
        # Checkouts against the restarted payment.
        await acks.until(40, since_s=killed_at[1], limit_s=15.0)
        stop.set()

    plan = checkout_plan(state.gateway, state.api_key)  # built before the clock starts
    load, _ = await asyncio.gather(checkout_load(plan, acks.count, stop), crash())
    return load, killed_at[0], killed_at[1]


async def resolved_and_replayed(
    gateway: str, api_key: str | None, acked_keys: list[str], rows: dict[str, Row]
) -> tuple[list[str], list[gateway_pb2.CheckoutResponse]]:
    """Each acknowledged key's charge id as GetCharge resolves it, then each ledger row's key
    checked out again with the same payload (16 calls in flight)."""
    md = metadata_for(api_key)
    async with grpc.aio.insecure_channel(gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        sem = asyncio.Semaphore(16)

        async def resolve(key: str) -> str:
            async with sem:
                reply = await stub.GetCharge(
                    payment_pb2.GetChargeRequest(idempotency_key=key), timeout=5, metadata=md
                )
                return str(reply.charge_id)

        async def replay(key: str) -> gateway_pb2.CheckoutResponse:
            _, user, amount, currency = rows[key]
            async with sem:
                reply: gateway_pb2.CheckoutResponse = await stub.Checkout(
                    gateway_pb2.CheckoutRequest(
                        user_id=user, amount_cents=amount, currency=currency, idempotency_key=key
                    ),
                    timeout=5,
                    metadata=md,
                )
                return reply

        resolved = await asyncio.gather(*(resolve(key) for key in acked_keys))
        replies = await asyncio.gather(*(replay(key) for key in rows))
    return list(resolved), list(replies)


async def test_kill_9_payment_mid_checkout_loses_and_doubles_nothing(crash_mesh: Mesh) -> None:
    state = crash_mesh.state
    assert state is not None
    load, kill_began, restarted = await checkouts_across_a_kill_9(crash_mesh)
    outcomes = load.outcomes
    acked = [o for o in outcomes if o.code == "OK" and o.status in ACKED]
    before = [o for o in acked if o.started_s < kill_began]
    after = [o for o in acked if o.started_s > restarted]
    assert len(before) > 20 and len(after) > 20, "the load must span the crash"

    db = Path(state.state_dir) / "payment" / "ledger.sqlite3"
    rows = ledger_rows(db)
    assert len(rows) == len(set(rows))  # one row per key (UNIQUE), checked anyway
    for o in acked:
        assert o.key in rows, f"acknowledged charge {o.charge_id} lost"
        assert rows[o.key][0] == o.charge_id == charge_id_for(o.key)
    loaded_keys = {o.key for o in outcomes}
    assert set(rows) <= loaded_keys  # nothing charged that nobody asked for

    resolved, replies = await resolved_and_replayed(
        state.gateway, state.api_key, [o.key for o in acked], rows
    )
    assert resolved == [o.charge_id for o in acked]
    assert all(r.replayed for r in replies)
    assert [r.charge_id for r in replies] == [rows[key][0] for key in rows]
    assert len(ledger_rows(db)) == len(rows)
    pending = sum(1 for o in outcomes if o.code == "OK" and o.status == "PENDING")
    print(
        f"\ncheckouts {len(outcomes)}, acknowledged {len(acked)}, pending {pending}, "
        f"failed {len(outcomes) - len(acked) - pending}, ledger rows {len(rows)}, "
        f"replayed {len(replies)}"
    )
