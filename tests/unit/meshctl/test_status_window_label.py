"""`mesh status` names both windows, its own and the console's, so two different error rates at
one moment read as two averages, not a disagreement (issue 46)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli import status as status_cmd
from grpc_resilience_mesh.cli.app import app
from tests.unit.meshctl.test_status_json_file import SNAPSHOT, FakeView


def test_the_title_names_its_window_and_the_consoles(monkeypatch: pytest.MonkeyPatch) -> None:
    titles: list[str] = []
    monkeypatch.setattr(status_cmd, "running_state", lambda *args: None)
    monkeypatch.setattr(status_cmd, "MeshView", FakeView)
    monkeypatch.setattr(status_cmd, "snapshot_over", lambda view, window: SNAPSHOT)

    def edge_view(snap: dict[str, Any], title: str) -> str:
        titles.append(title)
        return title

    monkeypatch.setattr(status_cmd, "edge_view", edge_view)
    result = CliRunner().invoke(app, ["status", "--window", "2"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert titles == ["mesh status (policy full; per second over 2s, the console's 5s; ms)"]
