"""The built-in checks an experiment can ask for (`checks: [ledger]`), each adding metrics it
declares; registered in grpc_resilience_mesh/chaos/registry.py on import.

They measure what load outcomes and counters cannot: whether the ledger holds exactly one
charge per acknowledged checkout, whether anything still runs after the load ended.
"""

from __future__ import annotations

import asyncio
import time

import grpc

from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.client.counters import scrape
from grpc_resilience_mesh.loadgen.in_process import metadata_for
from grpc_resilience_mesh.services.v1 import gateway_pb2_grpc, payment_pb2

TRANSIENT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)


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
            # As a client would: a refused lookup (the gateway's channel to payment may still
            # be reconnecting after the fault) is tried again, for up to 15 s.
            give_up = time.monotonic() + 15
            async with sem:
                while True:
                    try:
                        reply = await stub.GetCharge(
                            payment_pb2.GetChargeRequest(idempotency_key=key),
                            timeout=5,
                            metadata=md,
                        )
                        found[key] = reply.charge_id
                        return
                    except grpc.aio.AioRpcError as err:
                        if err.code() == grpc.StatusCode.NOT_FOUND:
                            return
                        if err.code() not in TRANSIENT or time.monotonic() > give_up:
                            raise
                    await asyncio.sleep(0.2)

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
    snap = await scrape(ctx.target.metrics)
    return {"in_flight_after_200ms": snap.total("mesh_server_in_flight")}


async def cancellation(ctx: CheckContext) -> dict[str, float]:
    """How many held calls on the dependency ran more than 100 ms past their deadline."""
    snap = ctx.phase.counters
    service = ctx.experiment.dependency
    name = "mesh_server_deadline_overrun_seconds_bucket"
    total = snap.total(name, service, le="+Inf")
    within = snap.total(name, service, le="0.1")
    return {
        "overrun_calls": total,
        "overrun_within_100ms": within,
        "overrun_over_100ms": total - within,
    }


async def flapping(ctx: CheckContext) -> dict[str, float]:
    """Errors while the dependency was down and up, and how long after each up it took until
    a checkout succeeded again. Times are on the fault timeline's clock (its `timeline_t0_s`),
    where the schedule put each down and up: the load starts some time after the schedule does,
    and counting from the first request instead shifted every window that late, so checkouts
    after the up were counted as while down."""
    outcomes = sorted(ctx.phase.load.outcomes, key=lambda o: o.started_s)
    if not outcomes:
        return {}
    t0 = ctx.phase.timeline_t0_s
    if t0 is None:
        t0 = outcomes[0].started_s
    windows: list[tuple[float, float]] = []  # (down_at, up_at) seconds on the timeline
    down_at: float | None = None
    for event in ctx.phase.timeline:
        if event.on:
            down_at = event.at_s
        elif down_at is not None:
            windows.append((down_at, event.at_s))
            down_at = None
    in_down = 0
    errors_down = errors_up = 0
    recoveries = []
    for o in outcomes:
        at = o.started_s - t0
        down = any(a <= at < b for a, b in windows)
        in_down += down
        bad = o.code != "OK" or o.status == "PENDING"
        errors_down += bad and down
        errors_up += bad and not down
    for _, up in windows:
        after = [
            o
            for o in outcomes
            if o.started_s - t0 >= up and o.code == "OK" and o.status == "SUCCEEDED"
        ]
        if after:
            first = after[0]
            recoveries.append(first.started_s - t0 + first.latency_s - up)
        else:  # never recovered before the load ended: at least that long, never left out
            ended = max(o.started_s - t0 + o.latency_s for o in outcomes)
            recoveries.append(max(ended - up, 0.0))
    snap = ctx.phase.counters
    return {
        "outages": float(len(windows)),
        "requests_while_down": float(in_down),
        "errors_while_down": float(errors_down),
        "errors_while_up": float(errors_up),
        "recover_max_s": max(recoveries, default=0.0),
        "recover_mean_s": sum(recoveries) / len(recoveries) if recoveries else 0.0,
        "breaker_to_open": snap.total("mesh_breaker_transitions_total", to_state="open"),
        "breaker_to_half_open": snap.total("mesh_breaker_transitions_total", to_state="half_open"),
        "breaker_to_closed": snap.total("mesh_breaker_transitions_total", to_state="closed"),
    }
