"""The console's traces tab reads wherever the running mesh's spans went: a fake Jaeger query
API on loopback when mesh.json says the services export OTLP and names Jaeger, this run's lines
of the span files otherwise; never an earlier run's files, and the tab names its source."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.client import trace_source
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.server import Console

OLD, NEW, IN_JAEGER = "a" * 32, "b" * 32, "c" * 32


def span_line(trace_id: str, start_ns: int) -> str:
    return json.dumps(
        {
            "trace_id": trace_id,
            "span_id": trace_id[:16],
            "parent_span_id": None,
            "name": "Recv.mesh.v1.Gateway.GetHome",
            "kind": "SERVER",
            "service": "gateway",
            "start_ns": start_ns,
            "end_ns": start_ns + 2_000_000,
            "status": {"code": "UNSET", "description": None},
            "attributes": {"rpc.grpc.status_code": 0},
            "events": [],
        }
    )


def otlp_trace(trace_id: str, start_ns: int) -> dict[str, Any]:
    """Jaeger's v3 answer (OTLP JSON) holding one gateway span."""
    span = {
        "traceId": trace_id,
        "spanId": trace_id[:16],
        "name": "Recv.mesh.v1.Gateway.GetHome",
        "kind": 2,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 3_000_000),
        "attributes": [{"key": "rpc.grpc.status_code", "value": {"intValue": "0"}}],
        "status": {},
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "gateway"}}]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}


class FakeJaeger:
    """GET /api/v3/traces (search) and /api/v3/traces/{id}, holding one trace."""

    def __init__(self, trace_id: str, start_ns: int) -> None:
        self.asked: list[str] = []
        doc = {"result": otlp_trace(trace_id, start_ns)}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.asked.append(self.path)
                path = urllib.parse.urlsplit(self.path).path
                found = path in ("/api/v3/traces", f"/api/v3/traces/{trace_id}")
                body = json.dumps(doc if found else {"error": "not found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeJaeger:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def mesh_state(state_dir: Path, environ: dict[str, str], started_ns: int) -> MeshState:
    return MeshState(
        gateway="127.0.0.1:1",
        toxiproxy=None,
        services={},
        proxies={},
        pids={},
        policy="full",
        state_dir=str(state_dir),
        extra=trace_source.record(environ, started_ns),
    )


@pytest.fixture
def started(tmp_path: Path) -> Iterator[int]:
    """A state dir whose span file holds an earlier run's trace and this run's (which began
    at the yielded time)."""
    now = time.time_ns()
    traces = tmp_path / "traces"
    traces.mkdir()
    lines = [span_line(OLD, now - 600 * 10**9), span_line(NEW, now + 10**9)]
    (traces / "gateway.jsonl").write_text("\n".join(lines) + "\n")
    yield now


def listed(console: Console) -> tuple[list[str], dict[str, Any]]:
    try:
        answer = console.get("/api/traces", {})
    finally:
        console.close()
    return [t["trace_id"] for t in answer["traces"]], answer


def test_local_files_list_this_runs_traces_only_and_say_so(tmp_path: Path, started: int) -> None:
    ids, answer = listed(Console(mesh_state(tmp_path, {}, started)))
    assert ids == [NEW]  # the trace from 10 minutes before this mesh began is not listed
    assert answer["source"] == "files"
    assert str(tmp_path / "traces") in answer["source_label"]
    assert "this run's" in answer["source_label"]


def test_exporting_to_jaeger_lists_jaegers_copy_not_the_files(tmp_path: Path, started: int) -> None:
    with FakeJaeger(IN_JAEGER, started + 2 * 10**9) as jaeger:
        environ = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
            "MESH_JAEGER_UI": jaeger.url + "/",
        }
        console = Console(mesh_state(tmp_path, environ, started))
        one = console.get(f"/api/traces/{IN_JAEGER}", {})
        ids, answer = listed(console)
    assert ids == [IN_JAEGER]  # neither the old nor the new local file's trace
    assert answer["source"] == "jaeger" and jaeger.url in answer["source_label"]
    assert any("query.service_name=gateway" in asked for asked in jaeger.asked)
    assert one["trace_id"] == IN_JAEGER and one["rows"][0]["service"] == "gateway"
    assert one["jaeger"] == f"{jaeger.url}/trace/{IN_JAEGER}"


def test_exporting_otlp_without_jaeger_lists_nothing_and_names_the_collector(
    tmp_path: Path, started: int
) -> None:
    environ = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}
    ids, answer = listed(Console(mesh_state(tmp_path, environ, started)))
    assert ids == []  # the files hold no span of this run's: they went to the collector
    assert answer["source"] == "otlp" and "http://collector:4317" in answer["source_label"]
    assert "MESH_JAEGER_UI" in answer["source_label"]


def test_jaeger_unreachable_is_said_not_replaced_by_files(tmp_path: Path, started: int) -> None:
    with FakeJaeger(IN_JAEGER, started) as jaeger:
        url = jaeger.url  # closed on leaving: nothing answers there now
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "MESH_JAEGER_UI": url}
    ids, answer = listed(Console(mesh_state(tmp_path, environ, started)))
    assert ids == [] and answer["source"] == "jaeger"
    assert "cannot reach Jaeger" in answer["error"]
