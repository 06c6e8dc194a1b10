"""The `criticality` scenario: open-loop overload of the capacity-declared backend with a mix of
CRITICAL and SHEDDABLE calls, and the goodput each kind got.

The gateway gives every public RPC one criticality (its policy's), so a mix is sent the way
the mesh's own callers send it: Recommend straight to recommendation's replicas (round-robin),
each call carrying `resilience-criticality` as a hop inside the mesh passes it on. With
`mark: false` the same calls go unmarked (every call counts as CRITICAL), which shows what
the admission layer does when it cannot tell them apart. Goodput is OK calls per second sent
after `warmup_s`, each within its deadline (a late one ends DEADLINE_EXCEEDED).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import CRITICALITY_KEY, SHED_REASONS
from grpc_resilience_mesh.chaos.registry import ScenarioContext, ScenarioResult
from grpc_resilience_mesh.chaos.scenarios.declarations import CRITICALITY_KINDS as KINDS
from grpc_resilience_mesh.chaos.scenarios.declarations import CRITICALITY_PER_KIND
from grpc_resilience_mesh.chaos.scenarios.params import CriticalityParams
from grpc_resilience_mesh.client.counters import scrape
from grpc_resilience_mesh.client.state import STATE_FILE
from grpc_resilience_mesh.loadgen.in_process import percentile
from grpc_resilience_mesh.services.customers import USER_COUNT, user_id
from grpc_resilience_mesh.services.runtime.internal_auth import internal_metadata
from grpc_resilience_mesh.services.topology import replica_of
from grpc_resilience_mesh.services.v1 import recommendation_pb2, recommendation_pb2_grpc

MOST_CALLS = 5000
Metadata = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Sent:
    kind: str
    at_s: float
    code: str
    latency_s: float


def _backends(ctx: ScenarioContext) -> tuple[list[str], Metadata]:
    """recommendation's replicas' listen addresses, from the mesh's state file, and the
    credential a caller inside the mesh presents (its internal token, when it has one)."""
    with (ctx.target.state_dir / STATE_FILE).open() as fh:
        state = json.load(fh)
    addresses = [
        s["listen"]
        for name, s in sorted(state["services"].items())
        if replica_of(name) == "recommendation"
    ]
    return addresses, internal_metadata(state.get("internal_token"))


async def _send(
    stubs: list[Any], p: CriticalityParams, rate: float, credential: Metadata = ()
) -> list[Sent]:
    count = min(MOST_CALLS, round(rate * p.duration_s))
    every = max(1, round(1 / p.critical_share))
    out: list[Sent] = []
    start = time.monotonic()

    async def one(i: int) -> None:
        kind = "critical" if i % every == 0 else "sheddable"
        md = (*credential, (CRITICALITY_KEY, "CRITICAL" if kind == "critical" else "SHEDDABLE"))
        # Round robin within each kind: by `i` alone, every critical call (i % 4 == 0) went
        # to the first of 2 replicas, 30/s against its 20/s.
        nth = i // every if kind == "critical" else i - i // every - 1
        sent = time.monotonic()
        try:
            await stubs[nth % len(stubs)].Recommend(
                recommendation_pb2.RecommendRequest(user_id=user_id(i % USER_COUNT + 1), limit=3),
                timeout=p.deadline_s,
                metadata=md if p.mark else credential,
            )
            code = "OK"
        except grpc.aio.AioRpcError as err:
            code = err.code().name
        out.append(Sent(kind, sent - start, code, time.monotonic() - sent))

    tasks = []
    for i in range(count):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(i)))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=p.deadline_s + 10)
    return out


def figures(sent: list[Sent], p: CriticalityParams, rate: float) -> dict[str, float]:
    """Per kind: offered and OK per second over the window after warmup, p99, refusals."""
    span_s = p.duration_s - p.warmup_s
    window = [s for s in sent if s.at_s >= p.warmup_s]
    out = {"declared_capacity_per_s": p.capacity_per_s, "offered_per_s": rate}
    good_all = 0
    for kind in KINDS:
        mine = [s for s in window if s.kind == kind]
        ok = [s.latency_s * 1000 for s in mine if s.code == "OK"]
        good_all += len(ok)
        out[f"{kind}_offered_per_s"] = len(mine) / span_s
        out[f"{kind}_goodput_per_s"] = len(ok) / span_s
        out[f"{kind}_goodput_vs_offered"] = len(ok) / max(len(mine), 1)
        out[f"{kind}_p99_ms"] = percentile(ok, 99)
        out[f"{kind}_refused"] = float(Counter(s.code for s in mine)["RESOURCE_EXHAUSTED"])
    out["goodput_vs_declared"] = good_all / span_s / p.capacity_per_s
    return out


async def criticality(ctx: ScenarioContext) -> ScenarioResult:
    p = ctx.params_as(CriticalityParams)
    rate = p.rate_x_capacity * p.capacity_per_s
    backends, credential = _backends(ctx)
    async with (
        grpc.aio.insecure_channel(backends[0]) as one,
        grpc.aio.insecure_channel(backends[-1]) as two,
    ):
        stubs = [recommendation_pb2_grpc.RecommendationServiceStub(c) for c in (one, two)]
        for stub in stubs:  # connected before the clock starts
            await stub.Recommend(
                recommendation_pb2.RecommendRequest(user_id=user_id(1)),
                timeout=5,
                metadata=credential,
            )
        ctx.progress(f"{ctx.variant.name}: overload", 0, 1)
        before = await scrape(ctx.target.metrics)
        sent = await _send(stubs, p, rate, credential)
        shed = await scrape(ctx.target.metrics) - before
        ctx.progress(f"{ctx.variant.name}: overload", 1, 1)
    metrics = figures(sent, p, rate)
    for reason in SHED_REASONS:  # the backend's refusals by reason, over the whole load
        metrics[f"shed_{reason}"] = shed.total(
            "mesh_server_shed_total", "recommendation", reason=reason
        )
    rows = [
        {
            "kind": k,
            **{m: metrics[f"{k}_{m}"] for m in CRITICALITY_PER_KIND},
        }
        for k in KINDS
    ]
    return ScenarioResult(metrics, rows)
