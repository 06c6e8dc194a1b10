"""Recent traces for the console: a list with filters, and one trace as rows of a waterfall
(spans and their decision events in time order), read from the tail of the span files."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.client import jaeger_query as jq
from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.client.trace_source import TraceSource

TAIL_BYTES = 4 * 1024 * 1024
"""Read at most this much of each span file, from its end: recent traces only, bounded cost."""
FILTERS = ("all", "failed", "degraded", "slow")


def _tail_spans(path: Path, tail_bytes: int) -> list[tr.Span]:
    with path.open("rb") as f:
        size = f.seek(0, 2)
        start = max(0, size - tail_bytes)
        f.seek(start)
        data = f.read()
    if start:
        data = data[data.find(b"\n") + 1 :]
    return tr.parse_spans(data.splitlines())


def load_recent(traces_dir: Path, tail_bytes: int = TAIL_BYTES) -> dict[str, list[tr.Span]]:
    """The last `tail_bytes` of each process's spans: its current file's tail, and the end of
    the generation before it when the current file is shorter (it rotated a moment ago)."""
    spans: list[tr.Span] = []
    if traces_dir.is_dir():
        by_process: dict[str, list[Path]] = {}
        for path in tr.trace_files(traces_dir):
            by_process.setdefault(path.name.split(".jsonl")[0], []).append(path)
        for files in by_process.values():
            left = tail_bytes
            for path in reversed(files):  # newest first
                try:
                    spans.extend(_tail_spans(path, left))
                    left -= path.stat().st_size
                except OSError:  # rotated away between the listing and the read
                    continue
                if left <= 0:
                    break
    return tr.group_traces(spans)


def trace_list(
    traces: dict[str, list[tr.Span]], kind: str = "all", limit: int = 50, slow_ms: float = 250.0
) -> list[dict[str, Any]]:
    """Newest first. failed: the root's status is not OK; degraded: a fallback answered;
    slow: longer than `slow_ms`."""
    rows = tr.recent(traces, len(traces))
    keeps: dict[str, Callable[[tr.TraceSummary], bool]] = {
        "all": lambda r: True,
        "failed": lambda r: r.status != "OK",
        "degraded": lambda r: r.degraded,
        "slow": lambda r: r.duration_ms >= slow_ms,
    }
    keep = keeps[kind]
    return [
        {
            "trace_id": r.trace_id,
            "operation": r.operation,
            "service": r.service,
            "start_ns": r.start_ns,
            "duration_ms": round(r.duration_ms, 3),
            "status": r.status,
            "degraded": r.degraded,
            "spans": r.span_count,
        }
        for r in rows
        if keep(r)
    ][:limit]


def find(traces_dir: Path, prefix: str) -> tuple[str, list[tr.Span]] | None:
    """A recent trace by id or unambiguous prefix."""
    return tr.find_trace(load_recent(traces_dir), prefix)


JAEGER_FETCH = 100
"""Traces asked of Jaeger per listing: the filters pick among them."""


def this_run(traces: dict[str, list[tr.Span]], since_ns: int) -> dict[str, list[tr.Span]]:
    """The traces that began at or after `since_ns`: an earlier run's are not this mesh's."""
    return {
        tid: spans for tid, spans in traces.items() if min(s["start_ns"] for s in spans) >= since_ns
    }


def _from_jaeger(source: TraceSource) -> dict[str, list[tr.Span]]:
    lookback_s = time.time() - source.since_ns / 1e9 + 60 if source.since_ns else 3600.0
    found = jq.jaeger_recent(source.where, "gateway", JAEGER_FETCH, lookback_s, timeout_s=3.0)
    return this_run(found, source.since_ns)


def listing(source: TraceSource, kind: str = "all", limit: int = 50) -> dict[str, Any]:
    """The traces tab: this run's traces from wherever they went, and that place named."""
    error = None
    found: dict[str, list[tr.Span]] = {}
    if source.kind == "jaeger":
        try:
            found = _from_jaeger(source)
        except jq.JaegerError as err:
            error = str(err)
    elif source.kind == "files":
        found = this_run(load_recent(Path(source.where)), source.since_ns)
    return {
        "traces": trace_list(found, kind, limit),
        "source": source.kind,
        "source_label": source.label(),
        "error": error,
    }


def lookup(
    source: TraceSource, dirs: tuple[Path, ...], prefix: str
) -> tuple[str, list[tr.Span]] | None:
    """One trace by id or prefix: from Jaeger when the mesh exports there, else (and for the
    reports' traces, written by experiments on a mesh of their own) from the span files."""
    if source.kind == "jaeger":
        try:
            if len(prefix) == 32:
                return prefix, jq.jaeger_trace(source.where, prefix, timeout_s=3.0)
            match = tr.find_trace(_from_jaeger(source), prefix)
            if match is not None:
                return match
        except jq.JaegerError:
            pass
    return next((m for d in dirs if (m := find(d, prefix)) is not None), None)


def waterfall_rows(spans: list[tr.Span]) -> list[dict[str, Any]]:
    """Spans depth-first under their parents, events and child spans in time order (as
    `mesh traces` draws them);
    offsets in ms from the trace's start."""
    origin = min(s["start_ns"] for s in spans)
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[tr.Span]] = {}
    for s in spans:
        parent = s.get("parent_span_id")
        children.setdefault(parent if parent in ids else None, []).append(s)
    rows: list[dict[str, Any]] = []

    def walk(span: tr.Span, depth: int) -> None:
        rows.append(
            {
                "kind": "span",
                "depth": depth,
                "name": span["name"],
                "service": span.get("service", ""),
                "start_ms": (span["start_ns"] - origin) / 1e6,
                "duration_ms": (span["end_ns"] - span["start_ns"]) / 1e6,
                "status": tr.status_of(span),
                "attributes": span.get("attributes", {}),
            }
        )
        # Events and child spans in time order: attempt, retry scheduled, attempt, ...
        items: list[tuple[int, int, tr.Span]] = [
            (e.get("time_ns", span["start_ns"]), 0, e) for e in span.get("events", ())
        ]
        items += [(c["start_ns"], 1, c) for c in children.get(span["span_id"], ())]
        for at_ns, is_span, item in sorted(items, key=lambda x: (x[0], x[1])):
            if is_span:
                walk(item, depth + 1)
            else:
                rows.append(
                    {
                        "kind": "event",
                        "depth": depth + 1,
                        "name": item["name"],
                        "start_ms": (at_ns - origin) / 1e6,
                        "attributes": item.get("attributes", {}),
                    }
                )

    for root in sorted(children.get(None, ()), key=lambda s: s["start_ns"]):
        walk(root, 0)
    return rows
