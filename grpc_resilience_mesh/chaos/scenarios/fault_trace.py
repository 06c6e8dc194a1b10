"""The `fault_trace` check: what a fault looks like in the trace of the fault phase's requests,
on the gateway's attempts at the experiment's dependency method and the spans of the server
that answered them (`Attempt.<svc>.<M>` on the gateway, its child `Recv.<svc>.<M>`).

Each fault source leaves its own mark: the services' fault interceptor fails a call the server
received (a `Recv.` span with a `fault injected` event); gRPC's A33 abort fails it before it
leaves the caller (a failed attempt with no `Recv.` span under it, no event anywhere); a delay
shows as time between the attempt's and the server span's edges: before the server span starts
(an A33 delay, applied before the call is sent) or after it ends (Toxiproxy's downstream
latency, on the answer's bytes).
"""

from __future__ import annotations

import statistics
from typing import Any

from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.chaos.scenarios.span_wait import phase_traces
from grpc_resilience_mesh.client.traces import Span
from grpc_resilience_mesh.services import topology
from grpc_resilience_mesh.services.telemetry.names import EV_FAULT


def _method_names(ctx: CheckContext) -> tuple[str, str]:
    grpc_service = topology.service(ctx.experiment.dependency).grpc_service
    dotted = f"{grpc_service}.{ctx.experiment.dependency_method}"
    return f"Attempt.{dotted}", f"Recv.{dotted}"


def _failed(span: Span) -> bool:
    return str((span.get("status") or {}).get("code", "")) == "ERROR"


def _measures(traces: dict[str, list[Span]], names: tuple[str, str]) -> dict[str, float]:
    attempt_name, server_name = names
    attempts = [s for spans in traces.values() for s in spans if s["name"] == attempt_name]
    servers: dict[Any, Span] = {
        s.get("parent_span_id"): s
        for spans in traces.values()
        for s in spans
        if s["name"] == server_name
    }
    failed = [a for a in attempts if _failed(a)]
    served = [(a, servers[a["span_id"]]) for a in attempts if a["span_id"] in servers]
    lead = [(s["start_ns"] - a["start_ns"]) / 1e6 for a, s in served]
    lag = [(a["end_ns"] - s["end_ns"]) / 1e6 for a, s in served]
    events = sum(
        1 for _, s in served if any(e.get("name") == EV_FAULT for e in s.get("events") or ())
    )
    return {
        "trace_requests": float(len(traces)),
        "trace_attempts": float(len(attempts)),
        "trace_failed_attempts": float(len(failed)),
        "trace_failed_unserved": float(sum(1 for a in failed if a["span_id"] not in servers)),
        "trace_fault_events": float(events),
        "trace_lead_ms_p50": statistics.median(lead) if lead else 0.0,
        "trace_lag_ms_p50": statistics.median(lag) if lag else 0.0,
    }


async def fault_trace(ctx: CheckContext) -> dict[str, float]:
    """The fault phase's traces: attempts at the dependency method, which failed, which of
    those no server saw, the server spans with a fault event, and where the time went."""
    trace_ids = {o.trace_id for o in ctx.phase.load.outcomes if o.trace_id}
    names = _method_names(ctx)
    found = await phase_traces(ctx.target.state_dir / "traces", trace_ids)
    traces = {t: [s for s in spans if s.get("name") in names] for t, spans in found.items()}
    return _measures(traces, names)
