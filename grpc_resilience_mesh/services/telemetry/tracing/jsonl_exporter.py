"""The embedded default without a collector: spans as JSON lines in `<MESH_TRACES_DIR>/<svc>.jsonl`.

One span per line: trace_id, span_id, parent_span_id (hex, null for a root), name, kind, service,
start_ns, end_ns, status {code, description}, attributes, events [{name, time_ns, attributes}].
`mesh traces` reads these files. A file that outgrows `max_bytes` is moved to `<svc>.jsonl.1` (`.1`
to `.2`, up to `backups` generations: grpc_resilience_mesh.services.telemetry.rotation) so a long
chaos run cannot fill the disk. The size is counted as lines are written and compared once per write
(one per writer wake-up, not per span).

In a service, `JsonLinesSpanProcessor` does the work (not the SDK's BatchSpanProcessor). The
mesh's own spans (light_spans) are queued as they end and encoded by hand (span_json) in
batches of ENCODE_BATCH on the loop's thread: one encoding right after another runs with the
encoder's code and data hot in the CPU's caches, several times faster than one encoding between
two calls' work. What is left of a batch when the writer thread wakes (every delay, or when
WAKE_AT lines wait) the writer encodes; then it appends every queued line in one write. SDK
spans (another processor is mounted, say) are encoded as they end. A stuck disk cannot stall
the event loop: the queue is bounded and a full queue drops (and counts) new spans.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from grpc_resilience_mesh.services.telemetry.rotation import rotate
from grpc_resilience_mesh.services.telemetry.tracing.light_span import LightSpan
from grpc_resilience_mesh.services.telemetry.tracing.span_json import (
    light_span_line,
    service_json,
    span_line,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""MESH_TRACES_MAX_BYTES: a trace file's size before it rotates."""
DEFAULT_BACKUPS = 1
"""MESH_TRACES_BACKUPS: rotated generations kept (at most 128 MiB per process by default)."""
DEFAULT_DELAY_S = 1.0
DEFAULT_MAX_QUEUE = 65536
WAKE_AT = 512
"""Queued lines that wake the writer before its delay is up."""
ENCODE_BATCH = 128
"""Ended spans the loop's thread encodes together (a pause of a few hundred microseconds)."""


def _value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One span as the dict its line holds (span_json.span_line writes the same, faster)."""
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
    """Appends lines to one file; as a SpanExporter it encodes each batch it is given."""

    def __init__(
        self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._size = 0
        """Characters in the file (its bytes, as the lines are ASCII JSON but for rare text)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = self.write_text("".join(span_line(s, service_json(s)) for s in spans))
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def write_text(self, text: str) -> bool:
        """Appends already-encoded lines; False when the file could not be written."""
        try:
            with self._lock:
                out = self._open()
                out.write(text)
                out.flush()
                self._size += len(text)
        except OSError:
            return False
        return True

    def _open(self) -> IO[str]:
        if self._file is not None and self._size > self.max_bytes:
            self._file.close()
            self._file = None
            rotate(self.path, self.backups)
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
            self._size = os.fstat(self._file.fileno()).st_size
        return self._file

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class JsonLinesSpanProcessor(SpanProcessor):
    """Encodes sampled spans as they end, queues the lines, and writes them from one thread."""

    def __init__(
        self,
        exporter: JsonLinesSpanExporter,
        delay_s: float = DEFAULT_DELAY_S,
        max_queue: int = DEFAULT_MAX_QUEUE,
    ) -> None:
        self.exporter = exporter
        self.delay_s = delay_s
        self.max_queue = max_queue
        self.dropped = 0
        """Spans not written because the queue was full (the writer is stuck or too slow)."""
        self.failed_writes = 0
        self.unencodable = 0
        """Spans whose line could not be encoded (an attribute set to something unexpected)."""
        self._lines: deque[str] = deque()
        self._spans: deque[tuple[LightSpan, str]] = deque()
        """Ended light spans (with their escaped service name) not encoded yet."""
        self._services: dict[int, str] = {}
        self._wake = threading.Event()
        self._flush_waiters: deque[threading.Event] = deque()
        self._stopping = False
        self._writer = threading.Thread(target=self._run, name="mesh-span-writer", daemon=True)
        self._writer.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is None or not ctx.trace_flags.sampled or self._stopping:
            return
        lines = self._lines
        if len(lines) >= self.max_queue:
            self.dropped += 1
            return
        resource = span.resource
        service = self._services.get(id(resource))
        if service is None:
            service = self._services[id(resource)] = service_json(span)
        lines.append(span_line(span, service))
        if len(lines) == WAKE_AT:
            self._wake.set()

    def queue_span(self, span: LightSpan, service: str) -> None:
        """Queues an ended light span (light_spans' path), under the same bound; every
        ENCODE_BATCH of them are encoded here, on the calling thread."""
        if self._stopping:
            return
        spans = self._spans
        if len(spans) + len(self._lines) >= self.max_queue:
            self.dropped += 1
            return
        spans.append((span, service))
        if len(spans) >= ENCODE_BATCH:
            self._encode_spans()
            if len(self._lines) >= WAKE_AT:
                self._wake.set()

    def _encode_spans(self) -> None:
        """Encodes the queued light spans into lines (the loop's thread or the writer: each
        span is taken by one of them)."""
        pop = self._spans.popleft
        lines = []
        for _ in range(len(self._spans)):
            try:
                span, service = pop()
            except IndexError:  # the other thread took the rest
                break
            try:
                lines.append(light_span_line(span, service))
            except Exception:  # a value the encoder cannot write loses its span, not the batch
                self.unencodable += 1
        self._lines.extend(lines)

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self.delay_s)
            self._wake.clear()
            self._write_queued()
        self._write_queued()

    def _write_queued(self) -> None:
        waiters = [self._flush_waiters.popleft() for _ in range(len(self._flush_waiters))]
        self._encode_spans()
        lines = self._lines
        pop = lines.popleft
        text = "".join([pop() for _ in range(len(lines))])
        if text and not self.exporter.write_text(text):
            self.failed_writes += 1
        for done in waiters:
            done.set()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """True once every line queued before the call is written (False after the timeout)."""
        if not self._writer.is_alive():
            return not self._lines and not self._spans
        done = threading.Event()
        self._flush_waiters.append(done)
        self._wake.set()
        return done.wait(timeout_millis / 1000)

    def shutdown(self) -> None:
        """Writes what is queued (waiting at most 30 s for a stuck writer), then closes."""
        if self._stopping:
            return
        self._stopping = True
        self._wake.set()
        self._writer.join(30.0)
        if not self._writer.is_alive():
            self.exporter.shutdown()
        if self.dropped or self.failed_writes or self.unencodable:
            log.warning(
                "spans not written to %s: %d dropped (queue full), %d failed writes, "
                "%d not encodable",
                self.exporter.path,
                self.dropped,
                self.failed_writes,
                self.unencodable,
            )
