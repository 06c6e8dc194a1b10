"""`mesh traces` on a recorded file: list, waterfall with events, Jaeger export; exporter choice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
from typer.testing import CliRunner

from chaos import traces as tr
from chaos.cli.app import app
from mesh.telemetry.jsonl_exporter import JsonLinesSpanExporter
from mesh.telemetry.tracing import choose_exporter, setup_tracing


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
                {"mesh.delay_s": 0.025, "mesh.reason": "UNAVAILABLE"},
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
