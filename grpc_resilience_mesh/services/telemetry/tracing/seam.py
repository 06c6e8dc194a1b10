"""The one interface the RPC spans (spans.py) make their spans through; choice.py picks what
stands behind it at start-up (the package docstring says why there are two)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

WireIds = tuple[int, int, int, trace.TraceState | None]
"""(trace id, span id, trace flags, trace state): what an attempt's traceparent carries."""


class SpanRecorder(Protocol):
    """How a span of the mesh starts. Every span is an OpenTelemetry API span (ended, given
    attributes, events and a status the usual way; current in the context when attached)."""

    def start(self, name: str, kind: SpanKind, attributes: Mapping[str, Any]) -> trace.Span:
        """A child of the context's current span (a new trace when there is none)."""
        ...

    def start_child(
        self, name: str, kind: SpanKind, parent: trace.Span, attributes: Mapping[str, Any]
    ) -> trace.Span:
        """A child of `parent`, whatever the context holds."""
        ...

    def start_server(
        self, name: str, carrier: Mapping[str, str], attributes: Mapping[str, Any]
    ) -> tuple[trace.Span, Context]:
        """A SERVER span continuing the caller's trace headers, and the context to attach."""
        ...

    def wire_ids(self, span: trace.Span) -> WireIds:
        """The ids of `span` (one this recorder started) for the next hop's traceparent."""
        ...
