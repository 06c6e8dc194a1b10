"""The traces of a topology run's fault phase worth opening, and where each one opens.

Every load call goes out with a trace of its own (a W3C traceparent, or the user's) and the run
id as baggage. The report lists the failed calls, the slowest and a sample of the OK ones by
trace id, each linked to Jaeger's UI when the topology (`traces: {jaeger_ui: URL}`) or
MESH_JAEGER_UI names one (`<ui>/trace/<id>`, as the console links); without one, the tag the
run's spans carry is the search a user runs in their tracing backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from grpc_resilience_mesh.chaos.topology.model import Topology
from grpc_resilience_mesh.chaos.topology.phases import BAGGAGE_KEY
from grpc_resilience_mesh.client.traces import JAEGER_UI

LISTED = 10
"""Trace ids listed per kind (failed, slowest, OK): enough to open, few enough to read."""


class Traced(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def latency_s(self) -> float: ...
    @property
    def code(self) -> str: ...
    @property
    def trace_id(self) -> str: ...


def jaeger_ui(topology: Topology, environ: Mapping[str, str] | None = None) -> str | None:
    """The Jaeger UI the report links to: the topology's own, else MESH_JAEGER_UI, else None."""
    url = topology.traces.jaeger_ui or JAEGER_UI.read(environ)
    return url.rstrip("/") if url else None


def spread(items: Sequence[Traced], n: int) -> list[Traced]:
    """At most `n` of `items`, evenly spaced from the first to the last: early and late ones."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1) if n > 1 else 0.0
    return [items[round(i * step)] for i in range(n)]


def _entry(record: Traced, jaeger: str | None) -> dict[str, Any]:
    return {
        "trace_id": record.trace_id,
        "index": record.index,
        "code": record.code,
        "latency_s": round(record.latency_s, 6),
        "open": f"{jaeger}/trace/{record.trace_id}" if jaeger else None,
    }


def notable_traces(
    records: Sequence[Traced], run_id: str, jaeger: str | None, n: int = LISTED
) -> dict[str, Any]:
    """The phase's failed calls (spread over the phase), its slowest, and OK ones (spread), at
    most `n` each; calls never sent (no trace id) are left out."""
    sent = sorted((r for r in records if r.trace_id), key=lambda r: r.index)
    failed = [r for r in sent if r.code != "OK"]
    ok = [r for r in sent if r.code == "OK"]
    slowest = sorted(sent, key=lambda r: r.latency_s, reverse=True)[:n]
    return {
        "search": f"{BAGGAGE_KEY}={run_id}",
        "jaeger_ui": jaeger,
        "failed_total": len(failed),
        "failed": [_entry(r, jaeger) for r in spread(failed, n)],
        "slowest": [_entry(r, jaeger) for r in slowest],
        "ok_total": len(ok),
        "ok_sample": [_entry(r, jaeger) for r in spread(ok, n)],
    }


def _shown(entry: dict[str, Any]) -> str:
    trace = f"`{entry['trace_id']}`"
    linked = f"[{trace}]({entry['open']})" if entry["open"] else trace
    return f"{linked} ({entry['code']}, {entry['latency_s']:.3f} s)"


def render_traces(traces: dict[str, Any]) -> list[str]:
    """The report's section: where the traces open, and the ids worth opening."""
    where = (
        f"each id below opens in Jaeger ({traces['jaeger_ui']})"
        if traces["jaeger_ui"]
        else "set `traces: {jaeger_ui: URL}` in the topology, or MESH_JAEGER_UI, to link them"
    )
    lines = [
        "",
        "## traces of the fault phase",
        "",
        "Every call went out with a W3C traceparent (a fresh trace, unless the load's metadata "
        "set one) and the run id as baggage: a service that records the baggage tags its spans "
        f"`{traces['search']}` (search for it in your tracing backend); {where}.",
        "",
    ]
    kinds = (
        (f"failed, {len(traces['failed'])} of {traces['failed_total']}", traces["failed"]),
        (f"slowest {len(traces['slowest'])}", traces["slowest"]),
        (f"OK, {len(traces['ok_sample'])} of {traces['ok_total']}", traces["ok_sample"]),
    )
    for label, entries in kinds:
        if entries:
            lines.append(f"- {label}: " + ", ".join(_shown(e) for e in entries))
    return lines
