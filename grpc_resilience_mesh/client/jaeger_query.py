"""Jaeger's copy of the traces, through its own query API (v3: OTLP JSON), read into the records the
services' JSONL files hold, so grpc_resilience_mesh.client.traces lists and draws either copy the
same way.

    GET /api/v3/traces/{trace_id}                     one trace (404: Jaeger does not have it)
    GET /api/v3/traces?query.service_name=...&...     the service's recent traces, newest first
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Any

from grpc_resilience_mesh.client.traces import Span, group_traces

_OTLP_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_OTLP_STATUS = ("UNSET", "OK", "ERROR")


class JaegerError(Exception):
    """Jaeger could not be asked, or did not have what was asked for (a one-line message)."""


def _otlp_value(value: dict[str, Any]) -> Any:
    """An OTLP JSON AnyValue as the plain value the JSONL exporter writes."""
    if "arrayValue" in value:
        return [_otlp_value(v) for v in value["arrayValue"].get("values", ())]
    if "kvlistValue" in value:
        return _otlp_attrs(value["kvlistValue"].get("values", ()))
    if "intValue" in value:
        return int(value["intValue"])  # int64 travels as a JSON string
    if "doubleValue" in value:
        return float(value["doubleValue"])
    for key in ("stringValue", "boolValue", "bytesValue"):
        if key in value:
            return value[key]
    return None


def _otlp_attrs(kvs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Attributes by key, less Jaeger's own notes (`@jaeger@warnings`: e.g. that the root's
    parent, the caller's span, is not in the trace), which no service wrote."""
    return {
        kv["key"]: _otlp_value(kv.get("value", {}))
        for kv in kvs
        if not kv["key"].startswith("@jaeger@")
    }


def _enum(raw: Any, names: tuple[str, ...], prefix: str) -> str:
    """An OTLP enum given as its number or its name ("SPAN_KIND_SERVER") as our short name."""
    if isinstance(raw, int):
        return names[raw] if 0 <= raw < len(names) else str(raw)
    return str(raw or names[0]).removeprefix(prefix)


def _otlp_events(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in time order, as the services recorded them: Jaeger's query service sorts a
    span's events by name."""
    found = [
        {
            "name": e.get("name", ""),
            "time_ns": int(e.get("timeUnixNano", 0)),
            "attributes": _otlp_attrs(e.get("attributes", ())),
        }
        for e in events
    ]
    return sorted(found, key=lambda e: e["time_ns"])


def from_otlp_json(doc: dict[str, Any]) -> list[Span]:
    """The spans of an OTLP JSON TracesData (Jaeger's v3 answer, its `result`), each shaped as
    a line the JSONL exporter writes, so the same renderer draws either copy."""
    spans: list[Span] = []
    for rs in doc.get("resourceSpans", ()):
        service = str(
            _otlp_attrs(rs.get("resource", {}).get("attributes", ())).get("service.name", "")
        )
        for ss in rs.get("scopeSpans", ()):
            for s in ss.get("spans", ()):
                status = s.get("status", {})
                spans.append(
                    {
                        "trace_id": s["traceId"],
                        "span_id": s["spanId"],
                        "parent_span_id": s.get("parentSpanId") or None,
                        "name": s.get("name", ""),
                        "kind": _enum(s.get("kind", 0), _OTLP_KINDS, "SPAN_KIND_"),
                        "service": service,
                        "start_ns": int(s.get("startTimeUnixNano", 0)),
                        "end_ns": int(s.get("endTimeUnixNano", 0)),
                        "status": {
                            "code": _enum(status.get("code", 0), _OTLP_STATUS, "STATUS_CODE_"),
                            "description": status.get("message") or None,
                        },
                        "attributes": _otlp_attrs(s.get("attributes", ())),
                        "events": _otlp_events(s.get("events", ())),
                    }
                )
    return spans


def _jaeger_get(url: str, timeout_s: float) -> dict[str, Any] | None:
    """The JSON body of a GET, or None on 404 (Jaeger's "not found")."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as reply:
            body = reply.read()
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise JaegerError(f"Jaeger answered HTTP {err.code} to {url}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise JaegerError(f"cannot reach Jaeger at {url}: {reason}") from None
    try:
        doc = json.loads(body)
    except ValueError:
        raise JaegerError(f"Jaeger's answer to {url} is not JSON") from None
    if not isinstance(doc, dict):
        raise JaegerError(f"Jaeger's answer to {url} is not a JSON object")
    return doc


_TRACE_ID = re.compile(r"[0-9a-f]{1,32}")


def trace_id_or_prefix(text: str) -> str:
    """`text` lower-cased if it is a trace id or a prefix of one (1 to 32 hex digits)."""
    if not _TRACE_ID.fullmatch(text.lower()):
        raise JaegerError(f"{text!r} is not a trace id (up to 32 hex digits)")
    return text.lower()


def jaeger_trace(base_url: str, trace_id: str, timeout_s: float = 5.0) -> list[Span]:
    """One trace's spans from Jaeger (GET /api/v3/traces/{id}); JaegerError when it has none."""
    url = f"{base_url.rstrip('/')}/api/v3/traces/{trace_id_or_prefix(trace_id)}"
    doc = _jaeger_get(url, timeout_s)
    spans = from_otlp_json(doc.get("result", {})) if doc else []
    if not spans:
        raise JaegerError(f"no trace {trace_id} in Jaeger at {base_url}")
    return spans


def jaeger_recent(
    base_url: str, service: str, limit: int, lookback_s: float = 86_400.0, timeout_s: float = 5.0
) -> dict[str, list[Span]]:
    """The traces Jaeger holds for `service` started within `lookback_s` (GET /api/v3/traces),
    grouped by trace id; empty when it holds none."""
    now = time.time()

    def stamp(at: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))

    query = urllib.parse.urlencode(
        {
            "query.service_name": service,
            "query.start_time_min": stamp(now - lookback_s),
            "query.start_time_max": stamp(now + 60),
            "query.num_traces": limit,
        }
    )
    doc = _jaeger_get(f"{base_url.rstrip('/')}/api/v3/traces?{query}", timeout_s)
    return group_traces(from_otlp_json(doc.get("result", {}))) if doc else {}
