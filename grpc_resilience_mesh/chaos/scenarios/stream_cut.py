"""The stream-cut scenario (seed 000: never retry a stream that already sent part of its
answer): Gateway.StreamRecommendations read `streams` times, one after another, while
recommendation's StreamRecommend fails on purpose, before its first item or after some.

The fault is the application-level one (grpc_resilience_mesh.services.faults) on every
recommendation replica: `after_messages` items, then UNAVAILABLE; with `first_attempt_only`, only
attempts that are not retries (gRFC A6's grpc-previous-rpc-attempts header), so a retry gets
through. Both cases are then deterministic, where a Toxiproxy `limit_data` would cut whichever call
happened to cross its byte count. What happened is read three ways: what the caller received (items,
status, the gateway's partial flag), the services' counters, and the gateway's trace of each stream
(its `stream ended` event: committed, retried-before-first-message or partial).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from grpc_resilience_mesh.chaos.registry import ScenarioContext, ScenarioResult
from grpc_resilience_mesh.chaos.scenarios.declarations import STREAM_OUTCOMES as OUTCOMES
from grpc_resilience_mesh.chaos.scenarios.params import StreamCutParams
from grpc_resilience_mesh.client.counters import Snapshot, scrape
from grpc_resilience_mesh.client.stream_client import StreamRead, read_stream
from grpc_resilience_mesh.client.traces import spans_of, trace_files
from grpc_resilience_mesh.loadgen.in_process import metadata_for, traced
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import replica_of
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc, gateway_pb2_grpc

STREAM = "/mesh.v1.RecommendationService/StreamRecommend"
TRACE_WAIT_S = 20.0
"""How long the gateway's span file may take to hold every stream's trace (it is written
every 0.5 s on the embedded mesh): a bound on a poll, not a sleep."""


async def _set_fault(ctx: ScenarioContext, fault: admin_pb2.Fault | None) -> None:
    """The fault on every recommendation replica (None: cleared)."""
    addrs = [a for s, a in ctx.target.admin.items() if replica_of(s) == "recommendation"]
    if not addrs:
        raise RuntimeError("stream-cut needs recommendation's admin address for its fault")
    for addr in addrs:
        async with grpc.aio.insecure_channel(addr) as channel:
            stub = admin_pb2_grpc.FaultAdminStub(channel)
            md = admin_metadata(ctx.target.admin_token)
            if fault is None:
                clear = admin_pb2.ClearFaultsRequest(method=STREAM)
                await stub.ClearFaults(clear, timeout=2, metadata=md)
            else:
                await stub.SetFault(admin_pb2.SetFaultRequest(fault=fault), timeout=2, metadata=md)


def _gateway_files(path: Path) -> list[Path]:
    """The gateway's span files (its replicas' too): its attempt spans carry the outcome."""
    return [f for f in trace_files(path) if f.name.startswith("gateway")]


def _sizes(path: Path) -> dict[int, int]:
    """How far each of the gateway's span files is written now, by inode (rotation renames a
    file and keeps its inode)."""
    sizes: dict[int, int] = {}
    for f in _gateway_files(path) if path.is_dir() else ():
        with suppress(OSError):
            stat = f.stat()
            sizes[stat.st_ino] = stat.st_size
    return sizes


def _outcomes_in(path: Path, trace_ids: set[str], since: dict[int, int]) -> dict[str, str]:
    """trace id -> the outcome of the gateway's `stream ended` event, for the traces found in
    what its span files gained after `since` (a file new since then is read whole)."""
    spans = []
    for f in _gateway_files(path):
        with suppress(OSError), f.open("rb") as lines:
            lines.seek(since.get(os.fstat(lines.fileno()).st_ino, 0))
            spans.extend(spans_of(lines, trace_ids))
    found: dict[str, str] = {}
    for span in spans:
        if not span.get("name", "").startswith("Sent.mesh.v1.RecommendationService"):
            continue
        for event in span.get("events") or ():
            if event.get("name") == "stream ended":
                found[span["trace_id"]] = str(
                    event.get("attributes", {}).get("mesh.stream_outcome")
                )
    return found


async def _trace_outcomes(
    ctx: ScenarioContext, trace_ids: set[str], expected: int, since: dict[int, int]
) -> Counter[str]:
    """The outcomes the traces show, once `expected` of them are written (or the wait ends)."""
    path = ctx.target.state_dir / "traces"
    deadline = time.monotonic() + TRACE_WAIT_S
    found: dict[str, str] = {}
    while path.is_dir():
        found = await asyncio.to_thread(_outcomes_in, path, trace_ids, since)
        if len(found) >= expected or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.25)
    return Counter(found.values())


def _counted(diff: Snapshot) -> dict[str, float]:
    return {
        "dep_calls": diff.total("mesh_server_calls_total", "recommendation", method=STREAM),
        "retries": diff.total("mesh_client_retries_total", "gateway", method=STREAM),
        "retries_skipped_committed": diff.total(
            "mesh_client_retries_skipped_total", "gateway", method=STREAM, reason="committed"
        ),
        "faults_injected": diff.total(
            "mesh_faults_injected_total", "recommendation", method=STREAM
        ),
        "breaker_rejections": diff.total("mesh_breaker_rejections_total", "gateway", method=STREAM),
    }


def _row(n: int, read: StreamRead, trace_id: str) -> dict[str, Any]:
    return {
        "stream": n,
        "items": len(read.items),
        "code": read.code,
        "partial": read.partial,
        "trace_id": trace_id,
    }


async def stream_cut(ctx: ScenarioContext) -> ScenarioResult:
    """`streams` streams of `limit` items, one at a time, under the variant's cut."""
    p = ctx.params_as(StreamCutParams)
    n, limit = p.streams, p.limit
    fault = admin_pb2.Fault(
        method=STREAM,
        error_rate=1.0,
        code=p.code,
        pushback_ms=-1,  # no hint: the retry waits its own jittered backoff
        after_messages=p.after_messages,
        first_attempt_only=p.first_attempt_only,
    )
    before = await scrape(ctx.target.metrics)
    written = _sizes(ctx.target.state_dir / "traces")
    await _set_fault(ctx, fault)
    reads: list[tuple[StreamRead, str]] = []
    try:
        async with grpc.aio.insecure_channel(ctx.target.gateway) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            for i in range(n):
                trace_id, md = traced(metadata_for(ctx.target.api_key))
                read = await read_stream(stub, "u-0001", limit, p.timeout_s, md)
                reads.append((read, trace_id))
                ctx.progress(f"{ctx.variant.name}: streams", i + 1, n)
    finally:
        await _set_fault(ctx, None)
    diff = await scrape(ctx.target.metrics) - before
    failed = [r for r, _ in reads if r.code != "OK"]
    metrics: dict[str, float] = {
        "streams": float(n),
        "complete": float(sum(1 for r, _ in reads if r.code == "OK" and len(r.items) == limit)),
        "partial": float(sum(1 for r in failed if r.partial)),
        "failed_empty": float(sum(1 for r in failed if not r.items)),
        "items_min": float(min((len(r.items) for r in failed), default=0)),
        "items_max": float(max((len(r.items) for r in failed), default=0)),
        "flag_matches": float(sum(1 for r in failed if r.flagged_messages == len(r.items))),
        **_counted(diff),
    }
    # A stream the open breaker refused sent no attempt, so its trace has no outcome to wait for.
    attempted = n - int(metrics["breaker_rejections"])
    outcomes = await _trace_outcomes(ctx, {t for _, t in reads}, attempted, written)
    metrics["traces_found"] = float(sum(outcomes.values()))
    for outcome in OUTCOMES:
        metrics[f"trace_{outcome.replace('-', '_')}"] = float(outcomes[outcome])
    return ScenarioResult(metrics, [_row(i + 1, r, t) for i, (r, t) in enumerate(reads)])
