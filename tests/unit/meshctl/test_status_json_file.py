"""`mesh status --json FILE` writes the snapshot to FILE and says so in one line, with no table
(issue 46: it printed the whole table too); `--json -` keeps stdout for the JSON, the table on
stderr; without --json the table is stdout's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli import status as status_cmd
from grpc_resilience_mesh.cli.app import app

SNAPSHOT: dict[str, Any] = {
    "policy": "full",
    "edges": [{"name": "gateway_to_profile"}, {"name": "gateway_to_payment"}],
    "errors": [],
    "experiment": None,
}
TABLE = "EDGE-TABLE"


class FakeView:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """No mesh to read."""

    def close(self) -> None:
        """Nothing opened."""


@pytest.fixture(autouse=True)
def no_mesh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status_cmd, "running_state", lambda *args: None)
    monkeypatch.setattr(status_cmd, "MeshView", FakeView)
    monkeypatch.setattr(status_cmd, "snapshot_over", lambda view, window: SNAPSHOT)
    monkeypatch.setattr(status_cmd, "edge_view", lambda snap, title: TABLE)


def run(*args: str) -> tuple[str, str]:
    result = CliRunner().invoke(app, ["status", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def test_a_file_gets_the_json_and_the_terminal_one_line(tmp_path: Path) -> None:
    out = tmp_path / "status.json"
    stdout, stderr = run("--json", str(out))
    assert json.loads(out.read_text()) == SNAPSHOT
    assert stdout == ""
    assert TABLE not in stderr
    assert stderr.strip().splitlines() == [
        f"mesh status: wrote {out} (policy full; 2 edges; rates per second over 1s)"
    ]


def test_stdout_json_keeps_the_table_on_stderr() -> None:
    stdout, stderr = run("--json", "-")
    assert json.loads(stdout) == SNAPSHOT
    assert TABLE in stderr


def test_without_json_the_table_is_stdouts() -> None:
    stdout, _ = run()
    assert TABLE in stdout
