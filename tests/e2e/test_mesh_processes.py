"""The launcher's process handling with real processes (no mesh): the SIGKILL escalation,
appended logs, deliberate kills a supervisor leaves alone, and the state dir's lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_resilience_mesh.client.state import STATE_FILE, MeshState
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.processes import ChildProcess
from grpc_resilience_mesh.launch.state_guard import StateDirInUse
from grpc_resilience_mesh.launch.supervisor import Backoff, Supervisor, SupervisorEvent
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e

IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('started', flush=True)\n"
    "time.sleep(60)\n"
)


def sleeper(mesh: Mesh, name: str, code: str = IGNORES_SIGTERM) -> ChildProcess:
    """A stand-in for one of the mesh's processes, spawned the way the launcher spawns them."""
    proc = mesh._spawn(name, ["-c", code], {})
    wait_until(lambda: "started" in proc.log_path.read_text(), 10, f"{name} starts")
    return proc


@pytest.fixture
def mesh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mesh]:
    """A Mesh whose processes are stand-ins: _launch spawns a sleeper, readiness is immediate."""
    m = Mesh(state_dir=tmp_path / "var", ports=Ports.auto())
    m.lock()
    monkeypatch.setattr(
        m, "_launch", lambda name, note=None: m._spawn(name, ["-c", IGNORES_SIGTERM], {}, note=note)
    )
    monkeypatch.setattr(m, "_await_ready", lambda proc: None)
    try:
        yield m
    finally:
        m.stop(timeout_s=1)


def test_restart_service_kills_a_process_that_ignores_sigterm_after_its_grace(mesh: Mesh) -> None:
    old = sleeper(mesh, "payment")
    mesh.procs.append(old)
    started = time.monotonic()
    new_pid = mesh.restart_service("payment", grace_s=0.5)
    took = time.monotonic() - started
    assert old.popen.returncode == -signal.SIGKILL
    assert took < 5, f"restart took {took:.1f} s"
    assert new_pid != old.popen.pid
    assert [p.popen.pid for p in mesh.procs] == [new_pid]


def test_a_restarted_process_appends_to_its_log(mesh: Mesh) -> None:
    old = sleeper(mesh, "payment")
    mesh.procs.append(old)
    first_run = old.log_path.read_text()
    mesh.restart_service("payment", signal.SIGKILL)
    (new,) = mesh.procs
    wait_until(
        lambda: new.log_path.read_text().count("started") >= 2, 10, "the restarted process writes"
    )
    log = new.log_path.read_text()
    assert log.startswith(first_run), "the first run's output is gone"
    assert f"the previous process ({old.popen.pid}) was killed by SIGKILL" in log


def test_a_supervisor_brings_back_a_crash_but_not_a_deliberate_kill_or_a_worker(
    mesh: Mesh,
) -> None:
    for name in ("payment", "notification"):
        mesh.procs.append(sleeper(mesh, name))
    worker = mesh._spawn("victim", ["-c", IGNORES_SIGTERM], {}, supervised=False)
    mesh.procs.append(worker)
    events: list[SupervisorEvent] = []
    now = [time.monotonic()]
    sup = Supervisor(mesh, events.append, Backoff(), clock=lambda: now[0])

    mesh.kill("notification", signal.SIGKILL)  # an experiment's kill, through the API
    os.kill(worker.popen.pid, signal.SIGKILL)
    worker.popen.wait(5)  # SIGKILL is delivered asynchronously: reap it before asking alive()
    payment = next(p for p in mesh.procs if p.name == "payment")
    os.kill(payment.popen.pid, signal.SIGKILL)  # a crash nobody asked for
    payment.popen.wait(5)
    for _ in range(3):
        now[0] += 1
        sup.poll()
    assert [(e.kind, e.name) for e in events] == [("exited", "payment"), ("restarted", "payment")]
    assert sorted(mesh.alive()) == ["payment"]
    assert next(p for p in mesh.procs if p.name == "payment").popen.pid != payment.popen.pid


def test_kill_reaches_the_newest_process_of_a_name(mesh: Mesh) -> None:
    """An experiment repeated on one mesh starts its worker again under the same name; the
    kill of run 2 must reach run 2's worker, not the dead one of run 1."""
    first = mesh._spawn("victim", ["-c", IGNORES_SIGTERM], {}, supervised=False)
    mesh.procs.append(first)
    mesh.kill("victim", signal.SIGKILL)
    second = mesh._spawn("victim", ["-c", IGNORES_SIGTERM], {}, supervised=False)
    mesh.procs.append(second)
    mesh.kill("victim", signal.SIGKILL)
    assert second.popen.returncode == -signal.SIGKILL
    assert "victim" not in mesh.alive()


def test_a_second_mesh_on_a_state_dir_in_use_is_refused_and_touches_nothing(
    tmp_path: Path,
) -> None:
    state_dir = tmp_path / "var"
    first = Mesh(state_dir=state_dir, ports=Ports.auto())
    first.lock()
    try:
        (state_dir / STATE_FILE).write_text('{"gateway": "first"}')
        before = {p.name: p.stat().st_mtime_ns for p in state_dir.iterdir()}
        second = Mesh(state_dir=state_dir, ports=Ports.auto())
        with pytest.raises(StateDirInUse) as err:
            second.start()
        assert err.value.pid == os.getpid()
        assert err.value.gateway == first.gateway
        assert f"pid {os.getpid()}" in str(err.value) and first.gateway in str(err.value)
        second.stop()  # as the runner's `finally` does: must not delete the first's state
        assert {p.name: p.stat().st_mtime_ns for p in state_dir.iterdir()} == before
        assert (state_dir / STATE_FILE).read_text() == '{"gateway": "first"}'
    finally:
        first.stop()
    assert not (state_dir / STATE_FILE).exists()
    third = Mesh(state_dir=state_dir, ports=Ports.auto())
    third.lock()  # free again once the first stopped
    third.stop()


def test_the_lock_of_a_mesh_killed_with_sigkill_is_released(tmp_path: Path) -> None:
    state_dir = tmp_path / "var"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from grpc_resilience_mesh.launch.mesh import Mesh\n"
            "from grpc_resilience_mesh.launch.ports import Ports\n"
            f"Mesh(state_dir=Path({str(state_dir)!r}), ports=Ports.auto()).lock()\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        mesh = Mesh(state_dir=state_dir, ports=Ports.auto())
        with pytest.raises(StateDirInUse) as err:
            mesh.lock()
        assert err.value.pid == holder.pid
    finally:
        holder.kill()
        holder.wait(10)
    mesh.lock()
    mesh.stop()


def test_mesh_json_is_born_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_chmod(*_: object, **__: object) -> None:
        raise AssertionError("created readable, then tightened: there was a window")

    monkeypatch.setattr(os, "chmod", no_chmod)
    monkeypatch.setattr(os, "fchmod", no_chmod)
    old_umask = os.umask(0o022)
    try:
        state = MeshState("g", None, {}, {}, {}, "full", str(tmp_path), api_key="secret")
        path = state.save(tmp_path)
        path = state.save(tmp_path)  # replaced, not rewritten in place
    finally:
        os.umask(old_umask)
    assert path.stat().st_mode & 0o777 == 0o600
    assert MeshState.load(tmp_path) == state
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]
