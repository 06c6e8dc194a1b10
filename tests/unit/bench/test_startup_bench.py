"""`mesh bench startup`'s figures: a median of fresh processes, shown as a markdown table."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from grpc_resilience_mesh.bench.startup import Figure, command, table, traces_lookup
from grpc_resilience_mesh.bench.trace_volume import SPANS_PER_TRACE, write_spans
from grpc_resilience_mesh.client.trace_index import TraceIndex
from grpc_resilience_mesh.client.traces import trace_files


def test_a_command_is_timed_as_the_median_of_fresh_runs() -> None:
    figure = command("python", [sys.executable, "-c", "pass"], runs=3)
    assert figure.runs == 3 and figure.wall_s > 0 and figure.cpu_s >= 0


def test_the_table_has_one_row_per_start() -> None:
    text = table([Figure("mesh --version", 0.21, 0.19, 5)])
    assert text.splitlines()[-1] == "| mesh --version | 0.21 | 0.19 | 5 |"


def test_the_span_volume_is_as_large_as_asked_and_holds_the_trace_named(tmp_path: Path) -> None:
    wanted, written = write_spans(tmp_path, 3_000_000)
    files = trace_files(tmp_path)
    assert len(files) == 14 and written == sum(f.stat().st_size for f in files)
    assert 3_000_000 <= written < 3_300_000
    found = TraceIndex(tmp_path).find(files, wanted)
    assert found is not None and len(found[1]) == SPANS_PER_TRACE


def test_the_traces_rows_time_real_lookups_over_a_volume_made_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    built, first, later = traces_lookup(runs=2, traces_mb=2)  # a lookup that fails raises
    assert built.what.startswith("mesh traces index, built ahead (")
    assert (first.runs, later.runs) == (1, 2)
    assert "first lookup" in first.what and "later lookups" in later.what
    assert list(tmp_path.iterdir()) == []
