"""Reads the spans the services wrote (`<state_dir>/traces/*.jsonl`) and tells them as traces:
a list of recent ones, one as a terminal waterfall with its events inline, or Jaeger UI JSON.
(grpc_resilience_mesh.client.jaeger_query reads Jaeger's copy into the same records.)"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.telemetry.rotation import generations

JAEGER_UI = settings.Var(
    "MESH_JAEGER_UI",
    settings.text,
    "",
    "the Jaeger UI the console and the chaos reports of a topology link traces to",
)
Span = dict[str, Any]
"""One line of a .jsonl file as written by
grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter."""

STATUS_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
"""gRPC's status codes by number (the spec's 0..16, held to grpc.StatusCode by a test): not
`import grpc`, which was ~0.1 s of CPU of `mesh traces ID`, a command that calls nothing."""
_CODES = dict(enumerate(STATUS_NAMES))


def trace_files(traces_dir: Path) -> list[Path]:
    """Every process's span files, each with its rotated generations, oldest first."""
    names = {p.name[: p.name.index(".jsonl") + 6] for p in traces_dir.glob("*.jsonl*")}
    return [f for name in sorted(names) for f in generations(traces_dir / name)]


def load_spans(paths: Iterable[Path]) -> list[Span]:
    """Every well-formed span in `paths`; a torn last line (a service still writing) is skipped."""
    spans: list[Span] = []
    for path in paths:
        with path.open(encoding="utf-8") as lines:
            spans.extend(parse_spans(lines))
    return spans


_ID_PREFIX = b'{"trace_id":"'


def spans_of(lines: Iterable[bytes], trace_ids: set[str]) -> list[Span]:
    """The spans of `trace_ids` among `lines` (a span file opened in binary). A line in the
    mesh's own shape (trace id first, compact) is skipped by its id before it is parsed, as the
    files are large; any other line is parsed to be sure."""
    wanted = {t.encode("ascii") for t in trace_ids}
    start = len(_ID_PREFIX)
    picked = (
        line
        for line in lines
        if not line.startswith(_ID_PREFIX) or line[start : start + 32] in wanted
    )
    return [span for span in parse_spans(picked) if span["trace_id"] in trace_ids]


def parse_spans(lines: Iterable[str | bytes]) -> list[Span]:
    """The well-formed spans among `lines` (one JSON object each); others are skipped."""
    spans: list[Span] = []
    for line in lines:
        try:
            span = json.loads(line)
        except ValueError:
            continue
        if isinstance(span, dict) and span.get("trace_id") and span.get("span_id"):
            spans.append(span)
    return spans


def group_traces(spans: Iterable[Span]) -> dict[str, list[Span]]:
    traces: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        traces[span["trace_id"]].append(span)
    return dict(traces)


def root_of(spans: list[Span]) -> Span:
    """The earliest span whose parent is not in the trace (the caller's own span never is)."""
    ids = {s["span_id"] for s in spans}
    roots = [s for s in spans if s.get("parent_span_id") not in ids] or spans
    return min(roots, key=lambda s: s["start_ns"])


def status_of(span: Span) -> str:
    code = span.get("attributes", {}).get("rpc.grpc.status_code")
    if isinstance(code, int):
        return str(_CODES.get(code, code))
    return "ERROR" if span.get("status", {}).get("code") == "ERROR" else "OK"


def is_degraded(spans: list[Span]) -> bool:
    return any(
        s.get("attributes", {}).get("mesh.degraded") is True
        or any(e["name"] == "fallback served" for e in s.get("events", ()))
        for s in spans
    )


@dataclass(frozen=True)
class TraceSummary:
    """One row of `mesh traces`."""

    trace_id: str
    operation: str
    service: str
    start_ns: int
    duration_ms: float
    status: str
    degraded: bool
    span_count: int


def summarise(trace_id: str, spans: list[Span]) -> TraceSummary:
    root = root_of(spans)
    start = min(s["start_ns"] for s in spans)
    end = max(s["end_ns"] for s in spans)
    return TraceSummary(
        trace_id,
        root["name"],
        root.get("service", ""),
        start,
        (end - start) / 1e6,
        status_of(root),
        is_degraded(spans),
        len(spans),
    )


def recent(traces: dict[str, list[Span]], limit: int) -> list[TraceSummary]:
    """The `limit` most recently started traces, newest first."""
    rows = [summarise(tid, spans) for tid, spans in traces.items()]
    rows.sort(key=lambda r: r.start_ns, reverse=True)
    return rows[:limit]


def find_trace(traces: dict[str, list[Span]], prefix: str) -> tuple[str, list[Span]] | None:
    """A trace by id or unambiguous id prefix."""
    prefix = prefix.lower()
    matches = [tid for tid in traces if tid.startswith(prefix)]
    return (matches[0], traces[matches[0]]) if len(matches) == 1 else None


def _fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _event_text(event: dict[str, Any]) -> str:
    """Name and attributes, sorted by key: Jaeger keeps no order of its own, so the files and
    Jaeger's copy read the same."""
    attrs = " ".join(
        f"{k.removeprefix('mesh.')}={_fmt_value(v)}"
        for k, v in sorted(event.get("attributes", {}).items())
    )
    return f"{event['name']} {attrs}".rstrip()


TIMES = 22
"""Width of a line's `   offsetms     tookms ` part."""


def _wrap(text: str, room: int) -> list[str]:
    """`text` in lines of at most `room`: broken at spaces, and after dots inside long span
    names; a piece wider than the room (an id) is split, never dropped."""
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^\s.]*\.|[^\s.]+|\s+", text):
        if piece.isspace():
            line += " " if line else ""
            continue
        if line.strip() and len(line) + len(piece) > room:
            lines.append(line.rstrip())
            line = ""
        while len(piece) > room:
            lines.append(piece[:room])
            piece = piece[room:]
        line += piece
    return [*lines, line.rstrip()] if line.strip() or not lines else lines


def waterfall(spans: list[Span], columns: int = 120) -> list[str]:
    """The trace as an indented tree: offset, duration, a bar on the trace's time scale, the
    span's service, name and status; events inline beneath, at their offset. Every line fits
    `columns`: the bar narrows (32 down to 10 cells), then long labels continue on the next
    line, under themselves."""
    start = min(s["start_ns"] for s in spans)
    total = max(max(s["end_ns"] for s in spans) - start, 1)
    children: dict[str | None, list[Span]] = defaultdict(list)
    ids = {s["span_id"] for s in spans}
    for s in spans:
        children[s.get("parent_span_id") if s.get("parent_span_id") in ids else None].append(s)
    depth: dict[str, int] = {}
    stack = [(s, 0) for s in children[None]]
    while stack:
        span, d = stack.pop()
        depth[span["span_id"]] = d
        stack += [(c, d + 1) for c in children[span["span_id"]]]
    longest = max(
        2 * depth.get(s["span_id"], 0) + len(f"{s['name']} [{s.get('service', '')}] {status_of(s)}")
        for s in spans
    )
    width = max(10, min(32, columns - TIMES - 3 - longest))
    lines: list[str] = []

    def emit(head: str, label: str) -> None:
        indent = len(label) - len(label.lstrip())
        first, *rest = _wrap(label.lstrip(), max(columns - len(head) - indent - 2, 16))
        lines.append(f"{head}{' ' * indent}{first}")
        lines.extend(f"{' ' * (len(head) + indent + 2)}{more}" for more in rest)

    def walk(span: Span, depth: int) -> None:
        left = int((span["start_ns"] - start) / total * width)
        size = max(1, round((span["end_ns"] - span["start_ns"]) / total * width))
        bar = " " * left + "█" * min(size, width - left) + " " * max(0, width - left - size)
        offset_ms = (span["start_ns"] - start) / 1e6
        took_ms = (span["end_ns"] - span["start_ns"]) / 1e6
        emit(
            f"{offset_ms:8.1f}ms {took_ms:8.1f}ms |{bar}| ",
            f"{'  ' * depth}{span['name']} [{span.get('service', '')}] {status_of(span)}",
        )
        # Events and child spans in time order: attempt, backoff, attempt, ... reads as a story.
        items: list[tuple[int, int, Span]] = [(e["time_ns"], 0, e) for e in span.get("events", ())]
        items += [(c["start_ns"], 1, c) for c in children[span["span_id"]]]
        for at_ns, is_span, item in sorted(items, key=lambda x: (x[0], x[1])):
            if is_span:
                walk(item, depth + 1)
            else:
                emit(
                    f"{(at_ns - start) / 1e6:8.1f}ms {'':10} {' ' * (width + 2)} ",
                    f"{'  ' * depth}  · {_event_text(item)}",
                )

    for top in sorted(children[None], key=lambda s: s["start_ns"]):
        walk(top, 0)
    return lines


def _tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, list):
        return {"key": key, "type": "string", "value": json.dumps(value)}
    return {"key": key, "type": "string", "value": str(value)}


def _jaeger_span(span: Span, process_id: str) -> dict[str, Any]:
    tags = [_tag(k, v) for k, v in span.get("attributes", {}).items()]
    tags.append(_tag("span.kind", str(span.get("kind", "INTERNAL")).lower()))
    status = span.get("status", {})
    if status.get("code") == "ERROR":
        tags += [_tag("error", True), _tag("otel.status_code", "ERROR")]
        if status.get("description"):
            tags.append(_tag("otel.status_description", status["description"]))
    parent = span.get("parent_span_id")
    return {
        "traceID": span["trace_id"],
        "spanID": span["span_id"],
        "operationName": span["name"],
        "references": [{"refType": "CHILD_OF", "traceID": span["trace_id"], "spanID": parent}]
        if parent
        else [],
        "startTime": span["start_ns"] // 1000,
        "duration": max((span["end_ns"] - span["start_ns"]) // 1000, 0),
        "tags": tags,
        "logs": [
            {
                "timestamp": e["time_ns"] // 1000,
                "fields": [
                    _tag("event", e["name"]),
                    *(_tag(k, v) for k, v in e.get("attributes", {}).items()),
                ],
            }
            for e in span.get("events", ())
        ],
        "processID": process_id,
        "warnings": None,
    }


def to_jaeger(traces: dict[str, list[Span]]) -> dict[str, Any]:
    """The JSON that Jaeger UI's "JSON File" upload opens: one entry per trace."""
    data: list[dict[str, Any]] = []
    for trace_id, spans in traces.items():
        services = sorted({s.get("service", "") for s in spans})
        pids = {svc: f"p{i + 1}" for i, svc in enumerate(services)}
        data.append(
            {
                "traceID": trace_id,
                "spans": [_jaeger_span(s, pids[s.get("service", "")]) for s in spans],
                "processes": {
                    pid: {"serviceName": svc or "unknown", "tags": []} for svc, pid in pids.items()
                },
                "warnings": None,
            }
        )
    return {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}
