"""Trace files rotate with a bounded total, and every reader reads the rotated generations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.console.trace_view import load_recent
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.telemetry.tracing import choose_exporter
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import JsonLinesSpanExporter

T0 = 1_700_000_000_000_000_000


def trace_id(n: int) -> str:
    return f"{n + 1:032x}"


def line(n: int) -> str:
    return (
        json.dumps(
            {
                "trace_id": trace_id(n),
                "span_id": f"{n + 1:016x}",
                "parent_span_id": None,
                "name": "Recv.mesh.v1.Gateway.GetHome",
                "kind": "SERVER",
                "service": "gateway",
                "start_ns": T0 + n * 1_000_000,
                "end_ns": T0 + n * 1_000_000 + 500_000,
                "status": {"code": "UNSET", "description": None},
                "attributes": {"pad": "x" * 200},
                "events": [],
            }
        )
        + "\n"
    )


def write(traces: Path, count: int, max_bytes: int, backups: int, batch: int = 5) -> None:
    """`count` one-span traces in writes of `batch` lines (one writer wake-up each)."""
    exporter = JsonLinesSpanExporter(traces / "gateway.jsonl", max_bytes, backups)
    for start in range(0, count, batch):
        assert exporter.write_text("".join(line(n) for n in range(start, start + batch)))
    exporter.shutdown()


def test_files_rotate_and_the_total_stays_bounded(tmp_path: Path) -> None:
    max_bytes, backups = 4000, 2
    write(tmp_path, 400, max_bytes, backups)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["gateway.jsonl", "gateway.jsonl.1", "gateway.jsonl.2"]
    one_write = len("".join(line(n) for n in range(5)))
    for path in tmp_path.iterdir():  # a file rotates at the first write past its bound
        assert path.stat().st_size <= max_bytes + one_write, path
    spans = tr.load_spans(tr.trace_files(tmp_path))
    starts = [s["start_ns"] for s in spans]
    assert starts == sorted(starts), "oldest generation first"
    assert spans[-1]["trace_id"] == trace_id(399), "nothing recent lost"
    assert len(spans) < 400, "the oldest were dropped"


def test_mesh_traces_finds_a_trace_in_the_oldest_kept_generation(tmp_path: Path) -> None:
    write(tmp_path, 400, 4000, 2)
    oldest = tr.load_spans([tmp_path / "gateway.jsonl.2"])[0]["trace_id"]
    result = CliRunner().invoke(app, ["traces", oldest, "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "GetHome" in result.output
    dropped = CliRunner().invoke(app, ["traces", trace_id(0), "--dir", str(tmp_path)])
    assert dropped.exit_code != 0


def test_the_console_reads_across_a_rotation_that_just_happened(tmp_path: Path) -> None:
    write(tmp_path, 30, 4000, 1)  # rotated on the way: the current file holds a few lines
    current = tr.load_spans([tmp_path / "gateway.jsonl"])
    assert 0 < len(current) < 30
    recent = load_recent(tmp_path, tail_bytes=8000)
    assert trace_id(29) in recent
    assert trace_id(29 - len(current)) in recent, "the end of .1 is read too"


def test_bounds_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        "MESH_TRACES_DIR": str(tmp_path),
        "MESH_TRACES_MAX_BYTES": "1048576",
        "MESH_TRACES_BACKUPS": "3",
    }
    exporter = choose_exporter("gateway", env)
    assert isinstance(exporter, JsonLinesSpanExporter)
    assert (exporter.max_bytes, exporter.backups) == (1048576, 3)
    with pytest.raises(ConfigError, match="MESH_TRACES_BACKUPS"):
        choose_exporter("gateway", {**env, "MESH_TRACES_BACKUPS": "-1"})
    with pytest.raises(ConfigError, match="MESH_TRACES_MAX_BYTES"):
        choose_exporter("gateway", {**env, "MESH_TRACES_MAX_BYTES": "100"})
