"""`mesh chaos run` and `mesh demo` index the run's spans once the embedded mesh has stopped,
so the first `mesh traces ID` after them reads the index instead of every span file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session import mesh_scope, session
from grpc_resilience_mesh.cli import chaos_run
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client.trace_index import INDEX_DIR, TraceIndex, index_traces
from grpc_resilience_mesh.client.traces import trace_files
from tests.unit.chaos.fake_mesh import FakeMesh

TRACE_ID = "ab" * 16


class TracingMesh(FakeMesh):
    """A mesh whose services wrote one span as it started."""

    def start(self) -> None:
        traces = self.state_dir / "traces"
        traces.mkdir(parents=True)
        span = {"trace_id": TRACE_ID, "span_id": "1" * 16, "name": "Recv.mesh.v1.Gateway.GetHome"}
        (traces / "gateway.jsonl").write_text(json.dumps(span) + "\n")


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, bool]]:
    """No experiment runs; each index_traces call is noted with whether the mesh had stopped."""

    async def no_experiments(*args: Any, **kwargs: Any) -> list[ExperimentResult]:
        return []

    calls: list[tuple[Path, bool]] = []

    def noted(traces_dir: Path) -> None:
        calls.append((traces_dir, all(m.stopped for m in FakeMesh.made)))
        index_traces(traces_dir)

    monkeypatch.setattr(session, "run_rounds", no_experiments)
    monkeypatch.setattr(chaos_run, "_summary", lambda *args: None)
    monkeypatch.setattr(session, "private_umask", lambda: None)
    monkeypatch.setattr(mesh_scope, "Mesh", TracingMesh)
    monkeypatch.setattr(session, "index_traces", noted)
    FakeMesh.made = []
    return calls


@pytest.mark.parametrize("command", ["chaos run provider-outage", "demo"])
def test_the_run_indexes_its_traces_after_the_mesh_stopped(
    fake_run: list[tuple[Path, bool]], tmp_path: Path, command: str
) -> None:
    state = tmp_path / "state"
    argv = [*command.split(), "--reports", str(tmp_path / "reports"), "--state-dir", str(state)]
    argv += ["--json", str(tmp_path / "run.json")]
    result = CliRunner().invoke(app, argv, env={"MESH_LOADGEN": "python"})
    assert result.exit_code == 0, result.output
    assert fake_run == [(state / "traces", True)]
    assert (state / "traces" / INDEX_DIR / "gateway.jsonl" / "meta.json").is_file()
    index = TraceIndex(state / "traces")
    found = index.find(trace_files(state / "traces"), TRACE_ID[:6])
    assert found is not None and found[0] == TRACE_ID
    assert index.scanned_bytes == 0, "the lookup found the index built"


def test_a_run_against_a_target_mesh_indexes_nothing(
    fake_run: list[tuple[Path, bool]], tmp_path: Path
) -> None:
    target = "toxiproxy=http://127.0.0.1:1,gateway=127.0.0.1:1"
    argv = ["chaos", "run", "provider-outage", "--target", target]
    argv += ["--reports", str(tmp_path / "reports"), "--state-dir", str(tmp_path / "state")]
    result = CliRunner().invoke(app, argv, env={"MESH_LOADGEN": "python"})
    assert result.exit_code == 0, result.output
    assert fake_run == [], "that mesh's own `mesh up` keeps its index"
