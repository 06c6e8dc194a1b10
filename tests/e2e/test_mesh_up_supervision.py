"""`mesh up` supervises its processes and guards its state dir, as a user sees it.

A kill -9 of payment does not stop the mesh: payment comes back on its ports under its policy,
mesh.json and Redis stay, checkouts work. `mesh restart SERVICE` restarts one process. A second
`mesh up` on the same state dir exits 2, naming the first, and the first keeps working.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.redis_server import ping
from tests.e2e.mesh_up_process import MeshUp, pid_alive, serving
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e


def one_line(text: str) -> str:
    """The console wraps long lines at 80 columns when it is not a terminal."""
    return " ".join(text.split())


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode().partition("=")[::2] for e in raw if b"=" in e)


def checkout(mesh_up: MeshUp) -> str:
    cli = mesh_up.mesh("call", "checkout", "--user", "u-0001", "--amount", "12.50")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    return cli.stdout


def test_kill_9_payment_brings_it_back_and_the_mesh_keeps_running(mesh_up: MeshUp) -> None:
    state = mesh_up.state
    old_pid, redis_pid = state["pids"]["payment"], state["pids"]["redis"]
    payment_addr = state["services"]["payment"]["listen"]
    log = mesh_up.state_dir / "logs" / "payment.log"
    first_run = log.read_text()
    assert first_run

    os.kill(old_pid, signal.SIGKILL)

    def restarted() -> int:
        """The new pid once payment serves again under one, else 0."""
        pid = int(mesh_up.saved_state()["pids"]["payment"])
        return pid if pid != old_pid and serving(payment_addr) else 0

    new_pid = wait_until(restarted, 30, "payment serving again under a new pid", 0.1)
    saved = mesh_up.saved_state()
    assert (mesh_up.state_dir / "mesh.json").stat().st_mode & 0o777 == 0o600
    assert saved["api_key"] == state["api_key"]
    assert saved["services"] == state["services"]  # the same ports
    assert {k: v for k, v in saved["pids"].items() if k != "payment"} == {
        k: v for k, v in state["pids"].items() if k != "payment"
    }
    env = environ(new_pid)
    assert env["MESH_POLICY"] == saved["policy"] == "full"
    assert env["LISTEN_ADDR"] == payment_addr
    assert pid_alive(redis_pid) and ping(state["extra"]["redis"])
    assert "SUCCEEDED" in checkout(mesh_up)
    assert log.read_text().startswith(first_run), "the restart truncated payment's log"
    ledger = mesh_up.state_dir / "payment" / "ledger.sqlite3"
    for path in (ledger, Path(f"{ledger}-wal"), Path(f"{ledger}-shm")):
        assert path.stat().st_mode & 0o777 == 0o600, path.name

    output = one_line(mesh_up.stop())
    assert mesh_up.proc.returncode == 0, output
    assert f"payment (pid {old_pid}) was killed by SIGKILL" in output
    assert f"payment restarted: pid {new_pid}" in output
    assert "exited unexpectedly" not in output
    events = (mesh_up.state_dir / "logs" / "supervisor.log").read_text()
    assert f"payment (pid {old_pid}) was killed by SIGKILL" in events
    assert f"payment restarted: pid {new_pid}" in events
    assert not pid_alive(new_pid)


def test_mesh_restart_restarts_one_service_and_refuses_with_exit_2(
    mesh_up: MeshUp, tmp_path: Path
) -> None:
    state = mesh_up.state
    old_pid = state["pids"]["gateway"]
    cli = mesh_up.mesh("restart", "gateway")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    new_pid = int(mesh_up.saved_state()["pids"]["gateway"])
    assert new_pid != old_pid and not pid_alive(old_pid)
    assert f"gateway restarted: pid {old_pid} -> {new_pid}" in one_line(cli.stdout)
    assert serving(state["gateway"])
    assert "SUCCEEDED" in checkout(mesh_up)  # same address, same key

    unknown = mesh_up.mesh("restart", "paymnet")
    assert unknown.returncode == 2
    assert "unknown service 'paymnet'" in one_line(unknown.stdout)
    assert mesh_up.saved_state()["pids"] == {**state["pids"], "gateway": new_pid}

    nothing = mesh_up.mesh("restart", "payment", "--state-dir", str(tmp_path / "none"))
    assert nothing.returncode == 2
    assert "no mesh is running" in one_line(nothing.stdout)


def test_a_second_mesh_up_exits_2_and_the_first_keeps_working(mesh_up: MeshUp) -> None:
    state_file = mesh_up.state_dir / "mesh.json"
    before = (state_file.read_bytes(), state_file.stat().st_mtime_ns)

    second = mesh_up.mesh("up", "--auto-ports", "--state-dir", str(mesh_up.state_dir))

    out = one_line(second.stdout + second.stderr)
    assert second.returncode == 2, out
    assert "already running" in out
    assert f"pid {mesh_up.proc.pid}" in out
    assert mesh_up.state["gateway"] in out
    assert "mesh is up" not in out and "MESH_API_KEY" not in out, "a banner was printed"
    assert (state_file.read_bytes(), state_file.stat().st_mtime_ns) == before
    assert all(pid_alive(pid) for pid in mesh_up.state["pids"].values())
    assert "SUCCEEDED" in checkout(mesh_up)
    jobs = mesh_up.mesh("jobs", "list", "--state-dir", str(mesh_up.state_dir))
    assert jobs.returncode == 0, jobs.stdout + jobs.stderr
    output = one_line(mesh_up.stop())
    assert mesh_up.proc.returncode == 0, output
    assert "exited unexpectedly" not in output
