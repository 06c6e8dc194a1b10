"""`mesh up` refuses, exit 2 and before anything starts, what this install cannot run: `--xds`
without the [xds] extra (grpcio-csds), and OTLP export with opentelemetry-proto's files
overwritten by that extra's xds-protos. Each message names its remedy."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli import up as up_cmd
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.launch.otel_protos import OTLP_ENDPOINTS, REPAIR
from grpc_resilience_mesh.services.settings import XDS_EXTRA


class NotStarted(Exception):
    """Raised where `mesh up` would make its mesh: the refusal should come before."""


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each mesh `mesh up` goes on to make (none is started: the first raises NotStarted)."""
    meshes: list[object] = []

    def fake_mesh(**kwargs: object) -> None:
        meshes.append(kwargs)
        raise NotStarted

    monkeypatch.setattr(up_cmd, "Mesh", fake_mesh)
    monkeypatch.setattr(up_cmd, "_ports", lambda *_: None)  # no port is reserved
    monkeypatch.setattr(up_cmd, "raise_open_files_limit", lambda: None)
    monkeypatch.setattr(up_cmd, "private_umask", lambda: None)
    return meshes


def invoke(tmp_path: Path, *args: str, **env: str) -> tuple[int, str]:
    state = ["--state-dir", str(tmp_path / "var")]
    unset: dict[str, str | None] = dict.fromkeys(OTLP_ENDPOINTS)
    result = CliRunner().invoke(app, ["up", "--auto-ports", *state, *args], env={**unset, **env})
    return result.exit_code, " ".join(result.output.split())


def test_xds_without_grpcio_csds_is_refused_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: list[object]
) -> None:
    monkeypatch.setitem(sys.modules, "grpc_csds", None)  # as in the base install
    code, output = invoke(tmp_path, "--xds")
    assert code == 2, output
    assert XDS_EXTRA in output and "--xds" in output
    assert made == []


def test_without_xds_the_missing_extra_is_not_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: list[object]
) -> None:
    monkeypatch.setitem(sys.modules, "grpc_csds", None)
    code, _ = invoke(tmp_path)
    assert code != 2 and len(made) == 1  # it went on to make the mesh


def test_otlp_with_overwritten_protos_is_refused_naming_the_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: list[object]
) -> None:
    stale = types.ModuleType("common_pb2")
    stale.InstrumentationLibrary = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.common.v1.common_pb2", stale)
    code, output = invoke(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4317")
    assert code == 2, output
    assert REPAIR in output
    assert made == []
    code, _ = invoke(tmp_path)  # no OTLP export: those protos are not needed
    assert code != 2 and len(made) == 1
