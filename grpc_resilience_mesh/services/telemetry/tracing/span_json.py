"""One finished span as its JSON line, encoded by hand (what `mesh traces` reads).

Byte for byte what `json.dumps(span_record(span), separators=(",", ":"), default=str)` gives
for the values a span can hold (str, bool, int, float, None and tuples of them; anything else
as its str()), at a fraction of the cost: no intermediate dicts, one C call per string.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _str
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from grpc_resilience_mesh.services.telemetry.tracing.light_span import LightSpan

_INF = float("inf")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


def value_json(value: Any) -> str:
    """One attribute value as JSON (tuples and lists as arrays, unknown types as their str)."""
    kind = type(value)
    if kind is str:
        return str(_str(value))
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return _float(value)
    if value is None:
        return "null"
    if kind is tuple or kind is list:
        return "[" + ",".join([value_json(v) for v in value]) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return str(_str(str.__str__(value)))
    return str(_str(str(value)))


_KEYS: dict[str, str] = {}
"""Attribute keys as JSON with their colon: a span carries a small, fixed set of them."""


def _key(key: str) -> str:
    found = _KEYS.get(key)
    if found is None:
        found = _str(key) + ":"
        if len(_KEYS) < 1024:
            _KEYS[key] = found
    return found


def attributes_json(attributes: Any) -> str:
    if not attributes:
        return "{}"
    keys = _KEYS
    parts = []
    for k, v in attributes.items():
        kind = type(v)
        # str and int (most values) inline; the rest as value_json writes them.
        if kind is str:
            text = _str(v)
        elif kind is int:
            text = int.__repr__(v)
        else:
            text = value_json(v)
        parts.append((keys.get(k) or _key(k)) + text)
    return "{" + ",".join(parts) + "}"


def _optional(value: str | None) -> str:
    return "null" if value is None else str(_str(value))


def span_line(span: ReadableSpan, service: str) -> str:
    """The span's line, newline included; `service` is the already-escaped service name."""
    ctx = span.context
    parent = span.parent
    status = span.status
    events = span.events
    events_json = (
        ",".join(
            [
                f'{{"name":{_str(e.name)},"time_ns":{e.timestamp},'
                f'"attributes":{attributes_json(e.attributes)}}}'
                for e in events
            ]
        )
        if events
        else ""
    )
    ids = (
        f'"trace_id":"{ctx.trace_id:032x}","span_id":"{ctx.span_id:016x}"'
        if ctx
        else '"trace_id":null,"span_id":null'
    )
    parent_id = f'"{parent.span_id:016x}"' if parent else "null"
    return (
        f'{{{ids},"parent_span_id":{parent_id},"name":{_str(span.name)},'
        f'"kind":"{span.kind.name}","service":{service},'
        f'"start_ns":{_optional_int(span.start_time)},"end_ns":{_optional_int(span.end_time)},'
        f'"status":{{"code":"{status.status_code.name}","description":'
        f"{_optional(status.description)}}},"
        f'"attributes":{attributes_json(span.attributes)},"events":[{events_json}]}}\n'
    )


def _optional_int(value: int | None) -> str:
    return "null" if value is None else int.__repr__(value)


def service_json(span: ReadableSpan) -> str:
    """The escaped service name of the span's resource (computed once per provider)."""
    return service_name_json(span.resource)


def service_name_json(resource: Resource) -> str:
    return str(_str(str(resource.attributes.get("service.name", ""))))


def light_span_line(span: LightSpan, service: str) -> str:
    """A LightSpan's line: what span_line writes for the SDK span with the same fields."""
    events = span.events
    events_json = (
        ",".join(
            [
                f'{{"name":{_str(name)},"time_ns":{time_ns},'
                f'"attributes":{attributes_json(attributes)}}}'
                for name, time_ns, attributes in events
            ]
        )
        if events
        else ""
    )
    parent = span.parent_id
    parent_id = "null" if parent is None else f'"{parent:016x}"'
    status = span.status
    status_json = (
        _UNSET_JSON
        if status.status_code is StatusCode.UNSET
        else f'{{"code":"{status.status_code.name}","description":{_optional(status.description)}}}'
    )
    return (
        f'{{"trace_id":"{span.trace_id:032x}","span_id":"{span.span_id:016x}",'
        f'"parent_span_id":{parent_id},"name":{_str(span.name)},'
        f'"kind":"{_KIND_NAMES[span.kind]}","service":{service},'
        f'"start_ns":{span.start_ns},"end_ns":{span.end_ns},"status":{status_json},'
        f'"attributes":{attributes_json(span.attributes)},"events":[{events_json}]}}\n'
    )


_KIND_NAMES = {kind: kind.name for kind in SpanKind}
"""An enum's `.name` is a property call; a span's kind is one of five."""
_UNSET_JSON = '{"code":"UNSET","description":null}'
"""Every span that went well: an UNSET status never carries a description."""
