"""Every request of a load, rendered from one JSON template and checked against its message
before the first is sent: "{n}" in any string becomes the request's index."""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from grpc_resilience_mesh.loadgen.any_method.method import LoadInputError, MethodInfo

Metadata = tuple[tuple[str, str], ...]
COUNTER = "{n}"
# gRPC's rule for a metadata key; "-bin" keys carry bytes, which JSON cannot say.
_KEY = re.compile(r"[0-9a-z_.-]+")


def render_requests(
    info: MethodInfo, template: dict[str, Any], metadata: dict[str, str], count: int
) -> list[tuple[Message, Metadata]]:
    """`count` requests and their metadata, the i-th with "{n}" replaced by i. A template or a
    header that does not fit is a LoadInputError naming the field (and the request's index
    when only some indexes fail), raised before anything is sent."""
    _check_metadata(metadata)
    templated = _mentions_counter(template) or _mentions_counter(metadata)
    calls: list[tuple[Message, Metadata]] = []
    for n in range(count):
        if calls and not templated:
            calls.append(calls[0])
            continue
        request = _message(info, _render(template, n), n)
        headers = tuple((key, value.replace(COUNTER, str(n))) for key, value in metadata.items())
        calls.append((request, headers))
    return calls


def _message(info: MethodInfo, rendered: Any, n: int) -> Message:
    message = info.request_type()
    try:
        json_format.ParseDict(rendered, message, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise LoadInputError(f"request {n} for {info.full_name}: {exc}") from exc
    return message


def _render(value: Any, n: int) -> Any:
    if isinstance(value, str):
        return value.replace(COUNTER, str(n))
    if isinstance(value, dict):
        return {key: _render(item, n) for key, item in value.items()}
    if isinstance(value, list):
        return [_render(item, n) for item in value]
    return value


def _mentions_counter(value: Any) -> bool:
    if isinstance(value, str):
        return COUNTER in value
    if isinstance(value, dict):
        return any(_mentions_counter(item) for item in value.values())
    if isinstance(value, list):
        return any(_mentions_counter(item) for item in value)
    return False


def _check_metadata(metadata: dict[str, str]) -> None:
    for key, value in metadata.items():
        if not _KEY.fullmatch(key) or key.endswith("-bin") or key.startswith("grpc-"):
            raise LoadInputError(
                f"metadata key {key!r}: expected lowercase letters, digits, '-', '_', '.'"
                " (not grpc-*, not -bin)"
            )
        if not isinstance(value, str) or not value.isascii() or not value.isprintable():
            raise LoadInputError(f"metadata {key!r}: expected a printable ASCII string")
