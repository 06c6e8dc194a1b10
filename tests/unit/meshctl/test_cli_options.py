"""Options every command treats alike: `--json -` keeps stdout for the JSON, MESH_STATE_DIR
names the state dir, and `mesh toxiproxy` passes --allow-non-loopback to its server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import grpc_resilience_mesh.embedded_toxiproxy.server
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session import session
from grpc_resilience_mesh.cli.app import app
from tests.unit.chaos.render_fixtures import demo_result


def test_chaos_run_json_to_stdout_sends_the_tables_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def replay(*args: Any) -> list[ExperimentResult]:  # no mesh: a recorded result
        return [demo_result("provider-outage")]

    monkeypatch.setattr(session, "run_rounds", replay)
    result = CliRunner().invoke(
        app,
        [
            "chaos",
            "run",
            "provider-outage",
            "--target",
            "gateway=127.0.0.1:1",
            "--json",
            "-",
            "--reports",
            str(tmp_path),
        ],
    )
    assert [r["name"] for r in json.loads(result.stdout)] == ["provider-outage"]
    assert "hypotheses held" in result.stderr


def test_jobs_commands_read_mesh_state_dir(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["jobs", "list"], env={"MESH_STATE_DIR": str(tmp_path)})
    assert result.exit_code == 2
    assert f"no running mesh in {tmp_path} " in " ".join(result.output.split())


def test_toxiproxy_passes_allow_non_loopback_to_its_server(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    async def serve_forever(*args: Any, **kwargs: Any) -> None:
        seen.append(kwargs)

    monkeypatch.setattr(
        grpc_resilience_mesh.embedded_toxiproxy.server, "serve_forever", serve_forever
    )
    monkeypatch.delenv("MESH_TOXIPROXY_TOKEN", raising=False)
    assert CliRunner().invoke(app, ["toxiproxy", "--allow-non-loopback"]).exit_code == 0
    assert CliRunner().invoke(app, ["toxiproxy"]).exit_code == 0
    assert seen == [
        {"allow_non_loopback": True, "token": None},
        {"allow_non_loopback": False, "token": None},
    ]


def test_toxiproxy_takes_its_api_token_from_the_environment_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, Any]] = []

    async def serve_forever(*args: Any, **kwargs: Any) -> None:
        seen.append(kwargs)

    monkeypatch.setattr(
        grpc_resilience_mesh.embedded_toxiproxy.server, "serve_forever", serve_forever
    )
    monkeypatch.setenv("MESH_TOXIPROXY_TOKEN", "  secret-from-the-environment  ")
    assert CliRunner().invoke(app, ["toxiproxy"]).exit_code == 0
    assert seen == [{"allow_non_loopback": False, "token": "secret-from-the-environment"}]
