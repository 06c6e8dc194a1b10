"""`mesh up --state-dir D` on a D that is not the user's own alone exits 2 before it starts
anything, naming the folder and the fix (grpc_resilience_mesh.launch.state_guard)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.mesh_up_process import MESH

pytestmark = pytest.mark.e2e


def mesh_up(state_dir: Path) -> tuple[int, str]:
    """`mesh up` on `state_dir`: its exit code and output. One that starts the mesh instead of
    refusing is stopped with SIGTERM (it stops what it started) and the test fails."""
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--no-console", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
    )
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        pytest.fail(f"mesh up did not refuse {state_dir}; it ran:\n{out[-2000:]}")
    return proc.returncode, " ".join(out.split())


def test_mesh_up_refuses_a_state_dir_others_can_write_and_a_planted_link(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    code, said = mesh_up(shared)
    assert code == 2, said
    assert f"mesh up: the state dir {shared} is writable by others (mode 0777)" in said
    assert f"chmod go-w {shared}" in said
    assert sorted(shared.iterdir()) == [], "nothing was written there"

    planted = tmp_path / "planted"
    planted.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    (planted / "mesh.json").symlink_to(victim)
    code, said = mesh_up(planted)
    assert code == 2, said
    assert f"mesh up: {planted / 'mesh.json'} is a symbolic link in the state dir" in said
    assert victim.read_text() == "the user's own file\n"
    assert [p.name for p in planted.iterdir()] == ["mesh.json"]
