"""`mesh topology up FILE` refuses bad input before it starts anything (exit 2, no state)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
CHAIN = ROOT / "examples" / "chain" / "topology.yaml"


def test_an_edge_to_an_undeclared_service_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "topology.yaml"
    bad.write_text(
        "kind: topology\nname: t\nservices:\n  kv: {address: 127.0.0.1:50051}\n"
        "edges:\n  - {from: client, to: kvv}\n"
    )
    state = tmp_path / "state.json"
    done = CliRunner().invoke(app, ["topology", "up", str(bad), "--state", str(state)])
    assert done.exit_code == 2
    assert "undeclared service 'kvv'" in done.output
    assert not state.exists()


def test_a_state_file_already_there_is_refused_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text("{}")
    done = CliRunner().invoke(app, ["topology", "up", str(CHAIN), "--state", str(state)])
    assert done.exit_code == 2
    assert "a topology is up already" in done.output
    assert state.read_text() == "{}"
    assert not (tmp_path / "chain-logs").exists(), "no service was started"
