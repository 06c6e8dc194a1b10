"""`mesh up` keeps its spans' index current in a thread of its own while the mesh runs, and
indexes once more after the mesh stopped: `mesh traces ID` then finds it built."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, cast

import pytest

from grpc_resilience_mesh.cli import up
from grpc_resilience_mesh.client.trace_index import INDEX_DIR, TraceIndex
from grpc_resilience_mesh.client.traces import trace_files
from grpc_resilience_mesh.launch.control import ControlServer
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.processes import ProcessStatus
from grpc_resilience_mesh.launch.trace_indexing import TraceIndexer

WAIT_S = 10.0
"""How long a test waits for the indexer's thread: generous, only a stuck thread takes it."""


def _span(trace_id: str) -> str:
    return json.dumps({"trace_id": trace_id, "span_id": "1" * 16, "name": trace_id}) + "\n"


def test_the_indexer_updates_in_the_background_and_once_more_at_the_end(tmp_path: Path) -> None:
    calls: list[str] = []
    twice = threading.Event()
    finishing = threading.Event()

    def build(traces_dir: Path) -> None:
        assert traces_dir == tmp_path
        calls.append("final" if finishing.is_set() else "background")
        if len(calls) == 2:
            twice.set()
        if len(calls) == 1:
            raise RuntimeError("a bug in the index")  # the thread goes on regardless

    indexer = TraceIndexer(tmp_path, every_s=0.0, build=build).start()
    assert twice.wait(WAIT_S)
    finishing.set()
    indexer.finish()
    assert calls[:2] == ["background", "background"]
    assert calls[-1] == "final"
    settled = len(calls)
    indexer.finish()  # after the thread ended: one more update, no thread left to make others
    assert len(calls) == settled + 1


class FakeMesh:
    """A mesh with no processes, whose services write their last span as they stop."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.stopping = False

    def supervised(self) -> list[ProcessStatus]:
        return []

    def components(self) -> list[str]:
        return []

    def restart_service(self, name: str) -> int:
        raise AssertionError("nothing dies here")

    def record_policy(self, policy: str) -> None:
        """Not asked."""

    def interrupt(self) -> None:
        self.stopping = True

    def stop(self) -> dict[str, int | None]:
        with (self.state_dir / "traces" / "gateway.jsonl").open("a") as spans:
            spans.write(_span("cd" * 16))
        return {}


def test_mesh_up_leaves_the_index_current_when_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "gateway.jsonl").write_text(_span("ab" * 16))
    monkeypatch.setattr(up, "_reporter", lambda path: lambda event: None)
    stop = threading.Event()
    stop.set()  # Ctrl-C at once: the supervisor stops the mesh
    mesh: Any = FakeMesh(tmp_path)
    up._supervise(cast(Mesh, mesh), stop, cast(ControlServer, None))
    assert (traces / INDEX_DIR / "gateway.jsonl" / "meta.json").is_file()
    index = TraceIndex(traces)
    found = index.find(trace_files(traces), "cdcd")
    assert found is not None and found[0] == "cd" * 16, "the span written at stop is indexed"
    assert index.scanned_bytes == 0
