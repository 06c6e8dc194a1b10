"""grpc_resilience_mesh.launch.otel_protos tells protos overwritten by xds-protos
(grpc/grpc#42428) from right ones, in another interpreter and in this one; `mesh up` and the
services name the same repair command, and that command is a module of the package."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch import otel_protos
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.telemetry.tracing import setup as tracing_setup

COMMON = "opentelemetry.proto.common.v1.common_pb2"
EXPORTER = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"


def test_this_venvs_protos_are_opentelemetry_protos() -> None:
    assert otel_protos.intact(sys.executable)
    assert otel_protos.intact_here()
    assert otel_protos.repair(sys.executable) is None


def test_protos_without_instrumentation_scope_are_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # xds-protos's files are generated from OTLP v0.9: InstrumentationLibrary, no Scope
    stale = tmp_path / "opentelemetry" / "proto" / "common" / "v1"
    stale.mkdir(parents=True)
    for folder in (stale, *stale.parents):
        if folder == tmp_path:
            break
        (folder / "__init__.py").write_text("")
    (stale / "common_pb2.py").write_text("InstrumentationLibrary = object\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert not otel_protos.intact(sys.executable)


@pytest.fixture
def overwritten(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process sees OTLP v0.9's common_pb2, as after xds-protos overwrote it."""
    stale = types.ModuleType(COMMON)
    stale.InstrumentationLibrary = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, COMMON, stale)


@pytest.mark.usefixtures("overwritten")
def test_overwritten_protos_refuse_otlp_naming_the_repair() -> None:
    assert not otel_protos.intact_here()
    why = otel_protos.otlp_refusal({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"})
    assert why is not None and otel_protos.REPAIR in why
    traces_only = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"}
    assert otel_protos.otlp_refusal(traces_only) is not None
    # without OTLP export nothing needs those protos
    assert otel_protos.otlp_refusal({"MESH_TRACES_DIR": "var/traces"}) is None


def test_right_protos_refuse_nothing() -> None:
    assert otel_protos.otlp_refusal({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317"}) is None


def test_a_service_whose_exporter_does_not_import_names_the_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, EXPORTER, None)  # its import fails, as with v0.9's files
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}
    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_ENDPOINT") as err:
        tracing_setup.choose_exporter("gateway", env)
    assert otel_protos.REPAIR in str(err.value)


def test_the_named_repair_is_this_module() -> None:
    assert tracing_setup.OTEL_PROTOS_REPAIR == otel_protos.REPAIR
    module = otel_protos.REPAIR.removeprefix("python -m ")
    assert importlib.util.find_spec(module) is not None
    assert module == otel_protos.__name__
