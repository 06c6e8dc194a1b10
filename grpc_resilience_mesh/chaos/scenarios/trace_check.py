"""The `traces` check: every trace of the fault phase judged by the variant's trace rules
(`traces:` expectations, grpc_resilience_mesh/chaos/experiment/fault_kinds.py).

The spans come from the services' span files (`<state dir>/traces`), or, when none of the
phase's traces is there and MESH_JAEGER_UI names a Jaeger, from Jaeger's query API (one GET
per trace, grpc_resilience_mesh.client.jaeger_query, as `mesh traces --jaeger` reads them).
Per rule it measures how many traces broke it; the traces that did are kept on the phase
(`broken_traces`) for the report, with what broke each.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING

from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.chaos.scenarios.declarations import CHECKED_METRIC
from grpc_resilience_mesh.chaos.scenarios.span_wait import phase_traces
from grpc_resilience_mesh.chaos.scenarios.trace_rules import judge
from grpc_resilience_mesh.client import jaeger_query
from grpc_resilience_mesh.client.traces import JAEGER_UI, Span

if TYPE_CHECKING:
    from grpc_resilience_mesh.chaos.experiment.fault_kinds import TraceRule


def read_jaeger(url: str, trace_ids: set[str]) -> dict[str, list[Span]]:
    """trace id -> its spans in Jaeger; a trace Jaeger does not have is left out."""
    found: dict[str, list[Span]] = {}
    for trace_id in sorted(trace_ids):
        with suppress(jaeger_query.JaegerError):
            spans = jaeger_query.jaeger_trace(url, trace_id)
            if spans:
                found[trace_id] = spans
    return found


async def _phase_traces(ctx: CheckContext, trace_ids: set[str]) -> dict[str, list[Span]]:
    """The phase's traces from the span files once they are whole (span_wait.py), else from
    Jaeger when the files hold none of them and MESH_JAEGER_UI names one."""
    traces = await phase_traces(ctx.target.state_dir / "traces", trace_ids)
    jaeger = JAEGER_UI.read()
    if not traces and jaeger:
        traces = await asyncio.to_thread(read_jaeger, jaeger.rstrip("/"), trace_ids)
    return traces


def rules_of(ctx: CheckContext) -> list[TraceRule]:
    """The variant's trace rules, one per rule name (the tightest number where several)."""
    rules: dict[str, TraceRule] = {}
    for e in ctx.experiment.expectations:
        if e.variant == ctx.variant.name and e.traces is not None:
            known = rules.get(e.traces.rule)
            if known is None or (e.traces.limit or 0) < (known.limit or 0):
                rules[e.traces.rule] = e.traces
    return list(rules.values())


async def trace_rules_check(ctx: CheckContext) -> dict[str, float]:
    """Per rule, the traces of the fault phase that broke it; none measured (n/a, so the
    expectation fails) when no trace of the phase could be read."""
    trace_ids = {o.trace_id for o in ctx.phase.load.outcomes if o.trace_id}
    rules = rules_of(ctx)
    traces = await _phase_traces(ctx, trace_ids) if rules and trace_ids else {}
    if not traces:
        for rule in rules:
            ctx.phase.notes[rule.metric] = (
                f"none of the phase's {len(trace_ids)} traces found in "
                f"{ctx.target.state_dir / 'traces'} (nor in Jaeger: MESH_JAEGER_UI)"
            )
        return {}
    deadline_s = ctx.experiment.load_for(ctx.variant).deadline_s
    metrics = {CHECKED_METRIC: float(len(traces))}
    for rule in rules:
        broken = [
            (trace_id, why)
            for trace_id, spans in traces.items()
            if (why := judge(rule.rule, rule.limit, deadline_s, spans)) is not None
        ]
        ctx.phase.broken_traces[rule.shown] = broken
        metrics[rule.metric] = float(len(broken))
    return metrics
