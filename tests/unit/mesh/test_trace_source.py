"""mesh.json says where the services send spans (from mesh up's environment, as the services'
own exporter choice reads it), and `mesh call`'s hint points there."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.cli.call import Found
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.client.trace_source import TraceSource, record
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.wiring import Wiring

TID = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("environ", "kind"),
    [
        ({}, "files"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"}, "otlp"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317", "MESH_JAEGER_UI": "http://j:16686"},
            "jaeger",
        ),
        ({"MESH_TRACING": "0", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317"}, "off"),
        ({"OTEL_SDK_DISABLED": "true"}, "off"),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317"}, "off"),
    ],
)
def test_the_source_follows_the_services_exporter_choice(
    environ: dict[str, str], kind: str, tmp_path: Path
) -> None:
    state = MeshState("g", None, {}, {}, {}, "full", str(tmp_path), extra=record(environ, 7))
    source = TraceSource.of(state)
    assert (source.kind, source.since_ns) == (kind, 7)


def test_mesh_json_records_the_source_and_the_runs_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("MESH_JAEGER_UI", "http://127.0.0.1:16686/")
    wiring = Wiring(Ports.default(), tmp_path, False, {}, {}, None, 1234)
    state = wiring.describe({}, "full", None, None)
    assert TraceSource.of(state) == TraceSource("jaeger", "http://127.0.0.1:16686", 1234)


def test_call_hints_at_the_copy_the_trace_went_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    state_file = tmp_path / "var" / "mesh.json"

    def hint(source: TraceSource | None) -> str:
        return Found("g", None, state_file, source is not None, "", source).trace_hint(TID)

    assert hint(None) == f"mesh traces {TID}; from var/traces"
    jaeger = TraceSource("jaeger", "http://127.0.0.1:16686")
    assert hint(jaeger) == f"mesh traces --jaeger http://127.0.0.1:16686 {TID}; Jaeger's copy"
    otlp = hint(TraceSource("otlp", "http://collector:4317"))
    assert "OTLP collector at http://collector:4317" in otlp and f"--jaeger URL {TID}" in otlp
    other = hint(TraceSource("files", str(tmp_path / "elsewhere" / "traces")))
    assert other == f"mesh traces --dir elsewhere/traces {TID}; from elsewhere/traces"
