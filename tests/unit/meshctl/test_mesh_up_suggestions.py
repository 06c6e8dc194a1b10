"""What `mesh up` suggests runs where it is pasted: the `mesh` program by the path it was run
by when the PATH does not find it, and the state dir when the other commands would not find
it; `--gateway-port` with `--auto-ports` is refused, never silently ignored."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.suggest import mesh_command, mesh_program, state_dir_prefix


def script(folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "mesh"
    path.write_text('#!/bin/sh\necho "mesh $*" "$MESH_STATE_DIR"\n')
    path.chmod(0o755)
    return path


def test_a_mesh_the_path_does_not_find_is_named_by_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mesh = script(tmp_path / ".venv" / "bin")
    monkeypatch.chdir(tmp_path)
    assert mesh_program(str(mesh), path="/usr/bin:/bin") == ".venv/bin/mesh"
    assert mesh_program(str(mesh), path=str(mesh.parent)) == "mesh"
    other = script(tmp_path / "elsewhere")
    assert mesh_program(str(mesh), path=str(other.parent)) == ".venv/bin/mesh"  # not this one


def test_the_state_dir_is_named_unless_found_by_default(tmp_path: Path) -> None:
    assert state_dir_prefix(Path("var"), {}) == ""
    assert state_dir_prefix(tmp_path, {"MESH_STATE_DIR": str(tmp_path)}) == ""
    assert state_dir_prefix(tmp_path / "a b", {}) == f"MESH_STATE_DIR='{tmp_path / 'a b'}' "
    assert state_dir_prefix(Path("var"), {"MESH_STATE_DIR": "/elsewhere"}) == "MESH_STATE_DIR=var "
    # read as the other commands read it: a blank value is unset, so they find var
    assert state_dir_prefix(Path("var"), {"MESH_STATE_DIR": " "}) == ""


def test_the_suggested_command_runs_in_a_shell_and_finds_the_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mesh = script(tmp_path / ".venv" / "bin")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("MESH_STATE_DIR", raising=False)
    line = mesh_command("call home --user u-0001", tmp_path / "state dir", str(mesh))
    out = subprocess.run(
        ["/bin/sh", "-c", line],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
    ).stdout
    assert out.strip() == f"mesh call home --user u-0001 {tmp_path / 'state dir'}"


def test_gateway_port_with_auto_ports_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["up", "--auto-ports", "--gateway-port", "50099", "--state-dir", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "--gateway-port and --auto-ports" in " ".join(result.output.split())
    assert not (tmp_path / "mesh.json").exists()
