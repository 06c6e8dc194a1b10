"""`spans_of`: the spans of the wanted traces from a span file, other lines skipped unparsed."""

from __future__ import annotations

import io
import json

from grpc_resilience_mesh.client.traces import spans_of

A, B, C = "a" * 32, "b" * 32, "c" * 32


def line(trace_id: str, span_id: str) -> bytes:
    span = {"trace_id": trace_id, "span_id": span_id, "name": "x"}
    return json.dumps(span, separators=(",", ":")).encode() + b"\n"  # as the mesh writes


def test_only_the_wanted_traces_spans_are_returned() -> None:
    data = line(A, "1") + line(B, "2") + line(A, "3") + line(C, "4") + line(A, "5")[:20]
    found = spans_of(io.BytesIO(data), {A, C})
    assert [(s["trace_id"], s["span_id"]) for s in found] == [(A, "1"), (A, "3"), (C, "4")]


def test_a_line_in_another_shape_is_parsed_and_a_broken_one_skipped() -> None:
    other = json.dumps({"span_id": "9", "trace_id": A}).encode() + b"\n"  # another writer's
    data = other + b"not json\n" + b'{"trace_id":"' + A.encode() + b'", torn\n' + line(A, "7")
    assert [s["span_id"] for s in spans_of(io.BytesIO(data), {A})] == ["9", "7"]
    assert spans_of(io.BytesIO(data), {B}) == []
