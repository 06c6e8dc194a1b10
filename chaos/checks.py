"""Named checks an experiment can ask for (`checks: [ledger]`), each adding metrics.

They measure what load outcomes and counters cannot: whether the ledger holds exactly one
charge per acknowledged checkout, whether anything still runs after the load ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from chaos.counters import scrape
from chaos.load import metadata_for
from mesh.v1 import gateway_pb2_grpc, payment_pb2

if TYPE_CHECKING:
    from chaos.experiment import Experiment, Variant
    from chaos.runner import PhaseResult, Target


@dataclass
class CheckContext:
    """What a check may look at: the target, the experiment, and the phase just measured."""

    target: Target
    experiment: Experiment
    variant: Variant
    phase: PhaseResult


async def ledger(ctx: CheckContext) -> dict[str, float]:
    """Every checkout key resolved through GetCharge once the faults are gone.

    lost: acknowledged SUCCEEDED but absent from the ledger; pending_unresolved: PENDING whose
    charge GetCharge cannot find (nothing was charged: the client must retry); charge ids are
    derived from keys, so a key can never hold two charges and `duplicates` counts ids seen
    for more than one key.
    """
    checkouts = [o for o in ctx.phase.load.outcomes if o.rpc == "checkout"]
    md = metadata_for(ctx.target.api_key)
    found: dict[str, str] = {}
    async with grpc.aio.insecure_channel(ctx.target.gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        sem = asyncio.Semaphore(16)

        async def resolve(key: str) -> None:
            async with sem:
                try:
                    reply = await stub.GetCharge(
                        payment_pb2.GetChargeRequest(idempotency_key=key), timeout=5, metadata=md
                    )
                    found[key] = reply.charge_id
                except grpc.aio.AioRpcError as err:
                    if err.code() != grpc.StatusCode.NOT_FOUND:
                        raise

        await asyncio.gather(*(resolve(o.key) for o in checkouts))
    acked = [o for o in checkouts if o.code == "OK" and o.status in ("SUCCEEDED", "DECLINED")]
    pending = [o for o in checkouts if o.code == "OK" and o.status == "PENDING"]
    ids = list(found.values())
    return {
        "checkouts": float(len(checkouts)),
        "acknowledged": float(len(acked)),
        "pending": float(len(pending)),
        "pending_resolved": float(sum(1 for o in pending if o.key in found)),
        "pending_unresolved": float(sum(1 for o in pending if o.key not in found)),
        "ledger_charges": float(len(found)),
        "lost": float(sum(1 for o in acked if o.key not in found)),
        "duplicates": float(len(ids) - len(set(ids))),
        "client_errors": float(sum(1 for o in checkouts if o.code != "OK")),
    }


async def quiescence(ctx: CheckContext) -> dict[str, float]:
    """Calls still executing on every service 200 ms after the load ended."""
    await asyncio.sleep(0.2)
    snap = scrape(ctx.target.metrics)
    return {"in_flight_after_200ms": snap.total("mesh_server_in_flight")}


async def cancellation(ctx: CheckContext) -> dict[str, float]:
    """How long past its deadline a call kept running on the dependency (worst case, ms)."""
    snap = ctx.phase.counters
    service = ctx.experiment.dependency
    buckets: dict[float, float] = {}
    for (svc, name, labels), value in snap.values.items():
        if svc == service and name == "mesh_server_deadline_overrun_seconds_bucket":
            le = dict(labels)["le"]
            bound = float("inf") if le == "+Inf" else float(le)
            buckets[bound] = buckets.get(bound, 0.0) + value
    total = buckets.get(float("inf"), 0.0)
    within = sum(v for b, v in buckets.items() if b <= 0.1 and b == max(
        (x for x in buckets if x <= 0.1), default=-1))
    return {
        "overrun_calls": total,
        "overrun_within_100ms": within,
        "overrun_over_100ms": total - within,
    }


CHECKS: dict[str, Callable[[CheckContext], Awaitable[dict[str, Any]]]] = {
    "ledger": ledger,
    "quiescence": quiescence,
    "cancellation": cancellation,
}
