"""tools.otel_protos tells protos overwritten by xds-protos (grpc/grpc#42428) from right ones."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools import otel_protos


def test_this_venvs_protos_are_opentelemetry_protos() -> None:
    assert otel_protos.intact(sys.executable)
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
