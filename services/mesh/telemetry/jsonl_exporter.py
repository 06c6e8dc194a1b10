"""The embedded default without a collector: spans as JSON lines in `<MESH_TRACES_DIR>/<svc>.jsonl`.

One span per line: trace_id, span_id, parent_span_id (hex, null for a root), name, kind,
service, start_ns, end_ns, status {code, description}, attributes, events [{name, time_ns,
attributes}]. `mesh traces` reads these files. A file that outgrows `max_bytes` is moved to
`<svc>.jsonl.1` (one generation kept) so a long chaos run cannot fill the disk.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


def _value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One span as the dict written on its line."""
    ctx = span.get_span_context()
    parent = span.parent
    return {
        "trace_id": f"{ctx.trace_id:032x}" if ctx else None,
        "span_id": f"{ctx.span_id:016x}" if ctx else None,
        "parent_span_id": f"{parent.span_id:016x}" if parent else None,
        "name": span.name,
        "kind": span.kind.name,
        "service": span.resource.attributes.get("service.name", ""),
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "attributes": {k: _value(v) for k, v in (span.attributes or {}).items()},
        "events": [
            {
                "name": e.name,
                "time_ns": e.timestamp,
                "attributes": {k: _value(v) for k, v in (e.attributes or {}).items()},
            }
            for e in span.events
        ],
    }


class JsonLinesSpanExporter(SpanExporter):
    """Appends each exported batch to one file (run it behind a BatchSpanProcessor)."""

    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        text = "".join(
            json.dumps(span_record(s), separators=(",", ":"), default=str) + "\n" for s in spans
        )
        try:
            with self._lock:
                out = self._open()
                out.write(text)
                out.flush()
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _open(self) -> IO[str]:
        if self._file is not None and self._file.tell() > self.max_bytes:
            self._file.close()
            self._file = None
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        return self._file

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
