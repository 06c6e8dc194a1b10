"""`mesh traces ID` answers from a per-file index: the span files are read once, then only the
lines of the trace asked for (and what a service appended since)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client.trace_index import TraceIndex
from grpc_resilience_mesh.client.traces import trace_files

T0 = 1_700_000_000_000_000_000
SPANS = 100_000
PER_TRACE = 10
FILES = ("gateway.jsonl.2", "gateway.jsonl.1", "gateway.jsonl", "profile.jsonl")


def _line(n: int) -> str:
    trace = n // PER_TRACE
    return json.dumps(
        {
            "trace_id": f"{trace + 1:032x}",
            "span_id": f"{n + 1:016x}",
            "parent_span_id": None if n % PER_TRACE == 0 else f"{trace * PER_TRACE + 1:016x}",
            "name": f"span-{n}",
            "kind": "SERVER",
            "service": "gateway",
            "start_ns": T0 + n * 1_000,
            "end_ns": T0 + n * 1_000 + 500,
            "status": {"code": "UNSET", "description": None},
            "attributes": {},
            "events": [],
        }
    )


def _write(tmp_path: Path) -> None:
    per_file = SPANS // len(FILES)
    for k, name in enumerate(FILES):
        lines = (_line(n) for n in range(k * per_file, (k + 1) * per_file))
        (tmp_path / name).write_text("\n".join(lines) + "\n")


def test_mesh_traces_id_finds_one_trace_among_100k_spans(tmp_path: Path) -> None:
    _write(tmp_path)
    wanted = f"{5_000 + 1:032x}"  # spans 50000-50009: in the third file
    result = CliRunner().invoke(app, ["traces", wanted, "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "span-50000" in result.output and "span-50009" in result.output
    assert "span-50010" not in result.output


def test_the_index_is_reused_and_extended(tmp_path: Path) -> None:
    _write(tmp_path)
    files = trace_files(tmp_path)
    total = sum(f.stat().st_size for f in files)
    first = TraceIndex(tmp_path)
    assert first.find(files, f"{7:032x}") is not None
    assert first.scanned_bytes == total
    again = TraceIndex(tmp_path)
    found = again.find(files, f"{9_000:032x}")
    assert again.scanned_bytes == 0
    assert found is not None and len(found[1]) == PER_TRACE
    appended = _line(SPANS) + "\n"  # trace 10001, a new one, in the live file
    with (tmp_path / "profile.jsonl").open("a") as live:
        live.write(appended)
    grown = TraceIndex(tmp_path)
    found = grown.find(files, f"{SPANS // PER_TRACE + 1:032x}")
    assert grown.scanned_bytes == len(appended)
    assert found is not None and [s["name"] for s in found[1]] == [f"span-{SPANS}"]


def test_a_torn_last_line_is_indexed_once_complete(tmp_path: Path) -> None:
    whole = _line(0) + "\n"
    path = tmp_path / "gateway.jsonl"
    path.write_text(whole + whole[:40])
    assert TraceIndex(tmp_path).find([path], f"{1:032x}") is not None
    path.write_text(whole + whole)
    index = TraceIndex(tmp_path)
    found = index.find([path], f"{1:032x}")
    assert found is not None and len(found[1]) == 2
    assert index.scanned_bytes == len(whole)
