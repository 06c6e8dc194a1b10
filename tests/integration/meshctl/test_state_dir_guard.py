"""A state dir that is not the user's own is refused before the mesh writes in it: another
user's folder, one the group or others can write, one with a symbolic link planted in it. The
file a planted link points to is never touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.spawn import LogSpawner
from grpc_resilience_mesh.launch.state_guard import StateDirRefused

NOBODY = 65534
VICTIM_TEXT = "the user's own file\n"


def _mesh(state_dir: Path) -> Mesh:
    return Mesh(state_dir=state_dir, ports=Ports.auto())


def _victim(tmp_path: Path) -> Path:
    """A file of the user's, outside the state dir: what a planted link points to."""
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    return victim


def _refused(state_dir: Path) -> str:
    """Mesh.lock()'s refusal; the state dir stays unlocked and holds nothing new."""
    before = sorted(p.name for p in state_dir.iterdir())
    mesh = _mesh(state_dir)
    with pytest.raises(StateDirRefused) as err:
        mesh.lock()
    mesh.stop()
    assert sorted(p.name for p in state_dir.iterdir()) == before
    return str(err.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another uid takes root")
def test_a_state_dir_another_user_owns_is_refused(tmp_path: Path) -> None:
    state_dir = tmp_path / "var"
    state_dir.mkdir(mode=0o700)
    os.chown(state_dir, NOBODY, NOBODY)
    said = _refused(state_dir)
    assert f"the state dir {state_dir.resolve()} belongs to uid {NOBODY}, not to you" in said
    assert "--state-dir" in said and f"chown {os.geteuid()}" in said


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_state_dir_the_group_or_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    state_dir = tmp_path / "var"
    state_dir.mkdir()
    state_dir.chmod(mode)
    said = _refused(state_dir)
    assert f"{state_dir.resolve()} is writable by others (mode {mode:04o})" in said
    assert f"chmod go-w {state_dir.resolve()}" in said
    assert (state_dir.stat().st_mode & 0o777) == mode, "refused as found, not changed"


def test_a_mesh_lock_planted_as_a_link_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    state_dir = tmp_path / "var"
    state_dir.mkdir(mode=0o700)
    victim = _victim(tmp_path)
    (state_dir / "mesh.lock").symlink_to(victim)
    said = _refused(state_dir)
    assert f"{state_dir.resolve() / 'mesh.lock'} is a symbolic link" in said
    assert victim.read_text() == VICTIM_TEXT


def test_a_link_deeper_in_the_state_dir_is_refused(tmp_path: Path) -> None:
    state_dir = tmp_path / "var"
    (state_dir / "logs").mkdir(mode=0o700, parents=True)
    victim = _victim(tmp_path)
    (state_dir / "logs" / "gateway.log").symlink_to(victim)
    said = _refused(state_dir)
    assert f"{state_dir.resolve() / 'logs' / 'gateway.log'} is a symbolic link" in said
    assert "remove it" in said
    assert victim.read_text() == VICTIM_TEXT


def test_a_process_log_is_never_opened_through_a_link(tmp_path: Path) -> None:
    """A link that appears after the start-up check (the spawner opens logs on restarts)."""
    state_dir = tmp_path / "var"
    (state_dir / "logs").mkdir(mode=0o700, parents=True)
    victim = _victim(tmp_path)
    (state_dir / "logs" / "payment.log").symlink_to(victim)
    with pytest.raises(StateDirRefused, match=r"payment\.log is a symbolic link"):
        LogSpawner(state_dir).spawn("payment", ["-c", "print('started')"], {})
    assert victim.read_text() == VICTIM_TEXT


def test_the_users_own_private_state_dir_is_taken(tmp_path: Path) -> None:
    state_dir = tmp_path / "var"
    state_dir.mkdir(mode=0o755)  # readable by others is fine (private_dir tightens it)
    mesh = _mesh(state_dir)
    mesh.lock()
    try:
        assert (state_dir / "mesh.lock").is_file()
        assert (state_dir.stat().st_mode & 0o777) == 0o700
    finally:
        mesh.stop()
