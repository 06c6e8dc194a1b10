"""`mesh traces` on a recorded file: list, waterfall with events, Jaeger export; exporter choice."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client import jaeger_query as jq
from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.services.telemetry.tracing import choose_exporter, setup_tracing
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import JsonLinesSpanExporter


def _record(traces_dir: Path) -> tuple[str, str]:
    """Writes a degraded GetHome (two failed attempts, a fallback) and a healthy one."""
    provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
    provider.add_span_processor(
        SimpleSpanProcessor(JsonLinesSpanExporter(traces_dir / "gateway.jsonl"))
    )
    tracer = provider.get_tracer("test")
    t0 = 1_700_000_000_000_000_000
    ms = 1_000_000
    root = tracer.start_span("Recv.mesh.v1.Gateway.GetHome", kind=SpanKind.SERVER, start_time=t0)
    ctx = set_span_in_context(root)
    call = tracer.start_span(
        "Sent.mesh.v1.RecommendationService.Recommend", ctx, start_time=t0 + 1 * ms
    )
    for n, (start, end) in enumerate([(2, 5), (30, 33)], start=1):
        attempt = tracer.start_span(
            "Attempt.mesh.v1.RecommendationService.Recommend",
            set_span_in_context(call),
            kind=SpanKind.CLIENT,
            start_time=t0 + start * ms,
            attributes={"mesh.attempt": n, "rpc.grpc.status_code": 14},
        )
        attempt.set_status(Status(StatusCode.ERROR, "UNAVAILABLE: flaky"))
        attempt.end(t0 + end * ms)
        if n == 1:
            call.add_event(
                "retry scheduled",
                {"mesh.reason": "UNAVAILABLE", "mesh.delay_s": 0.025},  # drawn sorted by key
                timestamp=t0 + 5 * ms,
            )
    call.add_event("breaker rejected call", {"mesh.breaker_state": "open"}, timestamp=t0 + 40 * ms)
    call.set_attribute("rpc.grpc.status_code", 14)
    call.end(t0 + 40 * ms)
    root.add_event("fallback served", {"mesh.served_by": "popular"}, timestamp=t0 + 41 * ms)
    root.set_attributes(
        {
            "rpc.grpc.status_code": 0,
            "mesh.degraded": True,
            "mesh.degraded_parts": ("recommendation",),
        }
    )
    root.end(t0 + 42 * ms)
    healthy = tracer.start_span(
        "Recv.mesh.v1.Gateway.GetHome",
        kind=SpanKind.SERVER,
        start_time=t0 + 100 * ms,
        attributes={"rpc.grpc.status_code": 0},
    )
    healthy.end(t0 + 103 * ms)
    provider.shutdown()
    return f"{root.get_span_context().trace_id:032x}", f"{healthy.get_span_context().trace_id:032x}"


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str, str]:
    traces_dir = tmp_path / "var" / "traces"
    degraded, healthy = _record(traces_dir)
    with (traces_dir / "gateway.jsonl").open("a") as out:
        out.write('{"trace_id": "torn')  # a service killed mid-write
    return tmp_path / "var", degraded, healthy


def test_list_shows_root_status_and_degraded(recorded: tuple[Path, str, str]) -> None:
    state_dir, degraded, healthy = recorded
    found = tr.group_traces(tr.load_spans(tr.trace_files(state_dir / "traces")))
    rows = tr.recent(found, limit=10)
    assert [r.trace_id for r in rows] == [healthy, degraded]
    assert [(r.degraded, r.span_count, r.status) for r in rows] == [
        (False, 1, "OK"),
        (True, 4, "OK"),
    ]
    assert rows[1].operation == "Recv.mesh.v1.Gateway.GetHome"
    assert rows[1].duration_ms == pytest.approx(42.0)

    result = CliRunner().invoke(
        app, ["traces", "--state-dir", str(state_dir)], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    assert degraded in result.output and healthy in result.output
    assert "OK, degraded" in result.output


@pytest.mark.parametrize("width", [80, 120])
def test_the_list_keeps_ids_whole_and_fits(recorded: tuple[Path, str, str], width: int) -> None:
    state_dir, degraded, healthy = recorded
    result = CliRunner().invoke(
        app, ["traces", "--state-dir", str(state_dir)], env={"COLUMNS": str(width)}
    )
    assert result.exit_code == 0, result.output
    assert degraded in result.output and healthy in result.output and "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= width


@pytest.mark.parametrize("width", [80, 120])
def test_waterfall_lines_fit_the_terminal(recorded: tuple[Path, str, str], width: int) -> None:
    state_dir, degraded, _ = recorded
    result = CliRunner().invoke(
        app, ["traces", degraded, "--state-dir", str(state_dir)], env={"COLUMNS": str(width)}
    )
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= width
    flat = " ".join(result.output.split())  # wrapped labels read back whole
    for name in ("Attempt.mesh.v1.RecommendationService.Recommend", "reason=UNAVAILABLE"):
        assert name in flat.replace(". ", ".")


def test_help_names_where_the_traces_are() -> None:
    result = CliRunner().invoke(app, ["traces", "--help"], env={"COLUMNS": "200"})
    assert "var/chaos/traces" in result.output and "var/demo" not in result.output


def test_waterfall_nests_attempts_and_shows_events_at_their_offset(
    recorded: tuple[Path, str, str],
) -> None:
    state_dir, degraded, _ = recorded
    result = CliRunner().invoke(
        app, ["traces", degraded[:10], "--dir", str(state_dir / "traces")], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    lines = [x for x in result.output.splitlines() if "ms" in x][1:]
    spans = [x.split("| ")[-1] for x in lines if "|" in x]
    assert [x.strip().split(" ")[0] for x in spans] == [
        "Recv.mesh.v1.Gateway.GetHome",
        "Sent.mesh.v1.RecommendationService.Recommend",
        "Attempt.mesh.v1.RecommendationService.Recommend",
        "Attempt.mesh.v1.RecommendationService.Recommend",
    ]
    indent = [len(x) - len(x.lstrip()) for x in spans]
    assert indent[0] < indent[1] < indent[2] == indent[3]
    # Events sit in time order between the spans: the backoff between the two attempts.
    story = [x.split("· ")[-1] if "·" in x else x.split("| ")[-1].strip() for x in lines]
    assert story[3] == "retry scheduled delay_s=0.025 reason=UNAVAILABLE"
    assert story[5:] == [
        "breaker rejected call breaker_state=open",
        "fallback served served_by=popular",
    ]
    assert lines[4].lstrip().startswith("30.0ms") and "UNAVAILABLE" in lines[4]


def test_jaeger_export_is_what_the_ui_uploads(
    recorded: tuple[Path, str, str], tmp_path: Path
) -> None:
    state_dir, degraded, _ = recorded
    out = tmp_path / "trace.json"
    result = CliRunner().invoke(
        app, ["traces", degraded, "--state-dir", str(state_dir), "--export", str(out)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    (entry,) = doc["data"]
    assert entry["traceID"] == degraded
    assert entry["processes"] == {"p1": {"serviceName": "gateway", "tags": []}}
    spans = {s["spanID"]: s for s in entry["spans"]}
    root = next(s for s in spans.values() if not s["references"])
    assert root["operationName"] == "Recv.mesh.v1.Gateway.GetHome"
    assert root["duration"] == 42_000 and root["startTime"] == 1_700_000_000_000_000
    for s in spans.values():
        for ref in s["references"]:
            assert ref["refType"] == "CHILD_OF" and ref["spanID"] in spans
    tags = {t["key"]: t for t in root["tags"]}
    assert tags["mesh.degraded"] == {"key": "mesh.degraded", "type": "bool", "value": True}
    assert tags["span.kind"]["value"] == "server"
    (log,) = root["logs"]
    assert {"key": "event", "type": "string", "value": "fallback served"} in log["fields"]
    attempts = [s for s in spans.values() if s["operationName"].startswith("Attempt.")]
    assert all({"key": "error", "type": "bool", "value": True} in s["tags"] for s in attempts)


def test_exporter_choice_follows_the_environment(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    assert setup_tracing("gateway", {"MESH_TRACING": "0", "MESH_TRACES_DIR": "x"}) is None
    local = choose_exporter("gateway", {"MESH_TRACES_DIR": str(tmp_path)})
    assert isinstance(local, JsonLinesSpanExporter)
    assert local.path == tmp_path / "gateway.jsonl"
    otlp = choose_exporter(
        "gateway",
        {"MESH_TRACES_DIR": str(tmp_path), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"},
    )
    assert isinstance(otlp, OTLPSpanExporter)
    otlp.shutdown()
    assert choose_exporter("gateway", {}) is None


# --- `mesh traces --jaeger`: Jaeger's v3 answer (OTLP JSON) drawn by the same renderer. ---

JAEGER = "http://127.0.0.1:16686"


def _any(value: object) -> dict[str, object]:
    """An attribute value as Jaeger's jsonpb writes it (int64 as a string)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": value}


def _kvs(attrs: dict[str, object]) -> list[dict[str, object]]:
    return [{"key": k, "value": _any(v)} for k, v in sorted(attrs.items())]


def _as_jaeger_answers(spans: list[tr.Span]) -> dict[str, Any]:
    """The spans as Jaeger's GET /api/v3/traces/{id} answers them: OTLP JSON, attributes and
    events sorted by name, kinds and status codes as numbers, its own warning on the root."""
    kinds = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3}
    codes = {"UNSET": 0, "OK": 1, "ERROR": 2}
    otlp = []
    for s in spans:
        attrs = _kvs(s["attributes"])
        if s["parent_span_id"] is None:
            attrs.append({"key": "@jaeger@warnings", "value": _any(["no parent"])})
        status = {"code": codes[s["status"]["code"]]} if s["status"]["code"] != "UNSET" else {}
        if s["status"]["description"]:
            status["message"] = s["status"]["description"]
        otlp.append(
            {
                "traceId": s["trace_id"],
                "spanId": s["span_id"],
                **({"parentSpanId": s["parent_span_id"]} if s["parent_span_id"] else {}),
                "name": s["name"],
                "kind": kinds[s["kind"]],
                "startTimeUnixNano": str(s["start_ns"]),
                "endTimeUnixNano": str(s["end_ns"]),
                "attributes": attrs,
                "events": [
                    {
                        "timeUnixNano": str(e["time_ns"]),
                        "name": e["name"],
                        "attributes": _kvs(e["attributes"]),
                    }
                    for e in sorted(s["events"], key=lambda e: e["name"])
                ],
                "status": status,
            }
        )
    resource = {"attributes": _kvs({"service.name": "gateway", "telemetry.sdk.language": "python"})}
    return {
        "result": {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": {"name": "mesh"}, "spans": otlp}]}
            ]
        }
    }


class _Reply(io.BytesIO):
    def __enter__(self) -> _Reply:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(monkeypatch: pytest.MonkeyPatch, answer: object, asked: list[str]) -> None:
    """urlopen answers `answer` (a JSON document, or an exception to raise), no network."""

    def urlopen(url: str, timeout: float) -> _Reply:
        asked.append(url)
        if isinstance(answer, Exception):
            raise answer
        return _Reply(json.dumps(answer).encode())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)


def test_jaegers_answer_converts_back_to_the_spans_the_files_hold(
    recorded: tuple[Path, str, str],
) -> None:
    state_dir, degraded, _ = recorded
    spans = tr.group_traces(tr.load_spans(tr.trace_files(state_dir / "traces")))[degraded]
    back = jq.from_otlp_json(_as_jaeger_answers(spans)["result"])
    assert {s["span_id"]: s for s in back} == {s["span_id"]: s for s in spans}


@pytest.fixture
def jaeger_holds(
    recorded: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str, list[str]]:
    """Jaeger (no network: urlopen) answers with the degraded trace; the URLs asked."""
    state_dir, degraded, _ = recorded
    spans = tr.group_traces(tr.load_spans(tr.trace_files(state_dir / "traces")))[degraded]
    asked: list[str] = []
    _serve(monkeypatch, _as_jaeger_answers(spans), asked)
    return state_dir, degraded, asked


def test_the_waterfall_from_jaeger_is_the_one_from_the_files(
    jaeger_holds: tuple[Path, str, list[str]],
) -> None:
    state_dir, degraded, asked = jaeger_holds
    cols = {"COLUMNS": "120"}
    from_files = CliRunner().invoke(
        app, ["traces", degraded, "--state-dir", str(state_dir)], env=cols
    )
    from_jaeger = CliRunner().invoke(app, ["traces", degraded, "--jaeger", JAEGER + "/"], env=cols)
    assert from_jaeger.exit_code == 0, from_jaeger.output
    assert from_jaeger.output == from_files.output
    assert asked == [f"{JAEGER}/api/v3/traces/{degraded}"]


def test_the_list_from_jaeger_asks_for_the_gateways_recent_traces(
    jaeger_holds: tuple[Path, str, list[str]],
) -> None:
    _, degraded, asked = jaeger_holds
    result = CliRunner().invoke(
        app, ["traces", "--jaeger", JAEGER, "--limit", "7"], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    assert degraded in result.output and "OK, degraded" in result.output
    (url,) = asked
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert url.startswith(f"{JAEGER}/api/v3/traces?")
    assert query["query.service_name"] == ["gateway"] and query["query.num_traces"] == ["7"]
    assert query["query.start_time_min"] < query["query.start_time_max"]


@pytest.mark.parametrize(
    ("args", "answer", "line"),
    [
        (
            ["ab" * 16],
            urllib.error.HTTPError(JAEGER, 404, "Not Found", Message(), None),
            f"error: no trace {'ab' * 16} in Jaeger at {JAEGER}",
        ),
        ([], urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), None),
        (["ab" * 16], urllib.error.HTTPError(JAEGER, 500, "boom", Message(), None), None),
        (["ab" * 16], {"result": {}}, f"error: no trace {'ab' * 16} in Jaeger at {JAEGER}"),
        (["not-a-trace"], {}, "error: 'not-a-trace' is not a trace id (up to 32 hex digits)"),
        (["abcd"], {"result": {}}, f"error: no single trace with id 'abcd' in Jaeger at {JAEGER}"),
    ],
)
def test_what_jaeger_cannot_give_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, args: list[str], answer: object, line: str | None
) -> None:
    _serve(monkeypatch, answer, [])
    result = CliRunner().invoke(app, ["traces", *args, "--jaeger", JAEGER], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    (said,) = result.output.strip().splitlines()
    if line is not None:
        assert said == line
    elif isinstance(answer, urllib.error.HTTPError):
        assert said.startswith("error: Jaeger answered HTTP 500 to ")
    else:
        assert said.startswith(f"error: cannot reach Jaeger at {JAEGER}/api/v3/traces?")
        assert said.endswith("Connection refused")


def test_an_empty_list_from_jaeger_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _serve(monkeypatch, urllib.error.HTTPError(JAEGER, 404, "No traces found", Message(), None), [])
    result = CliRunner().invoke(app, ["traces", "--jaeger", JAEGER], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert result.output.strip() == f"no traces of service 'gateway' in Jaeger at {JAEGER}"
