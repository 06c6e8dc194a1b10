"""Ctrl-C, SIGTERM and SIGHUP take one way out of a run: its cleanup, then 128 + the signal."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
import typer
from rich.console import Console

from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.cli.stop_signals import StopSignals, mesh_left_behind, target_left_behind
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.processes import ChildProcess


class Forced(Exception):
    """Stands in for os._exit, which would end the test run."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def forced(code: int) -> NoReturn:
    raise Forced(code)


@pytest.fixture(autouse=True)
def handlers_restored() -> Iterator[None]:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def stop_signals(clock: Iterator[float] | None = None) -> tuple[StopSignals, io.StringIO]:
    out = io.StringIO()
    times = clock or iter(float(n) for n in range(100))
    signals = StopSignals(
        Console(file=out, width=200),
        "every fault was removed, the mesh stopped",
        lambda: ["the mesh's processes: PIDs 11 12"],
        clock=lambda: next(times),
        force_exit=forced,
    )
    return signals, out


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_signal_cancels_the_run_and_exits_128_plus_it_after_the_cleanup(
    sig: signal.Signals, code: int
) -> None:
    cleaned: list[str] = []

    async def run() -> None:
        try:
            os.kill(os.getpid(), sig)
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # the cleanup may await: the task was cancelled once
            cleaned.append("faults removed")

    signals, out = stop_signals()
    with pytest.raises(typer.Exit) as exited, signals:
        signals.run(run())
    assert exited.value.exit_code == code
    assert cleaned == ["faults removed"]
    said = out.getvalue()
    assert f"interrupted by {sig.name}: every fault was removed, the mesh stopped" in said
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, "handlers put back"


def test_a_signal_outside_the_loop_interrupts_as_ctrl_c_does() -> None:
    """While the mesh starts (no loop yet), the signal raises where it lands."""
    signals, _ = stop_signals()
    reached = []
    with pytest.raises(typer.Exit) as exited, signals:
        os.kill(os.getpid(), signal.SIGTERM)
        reached.append("after the signal")
    assert exited.value.exit_code == 143
    assert reached == []


def test_a_signal_during_the_mesh_stop_lets_it_finish_then_exits_128_plus_it() -> None:
    """The run ended and its mesh is stopping: cutting that stop short would orphan it."""
    signals, out = stop_signals()
    stopped = []
    with pytest.raises(typer.Exit) as exited, signals:
        with signals.cleaning():
            os.kill(os.getpid(), signal.SIGHUP)
            stopped.append("every process stopped")
    assert stopped == ["every process stopped"]
    assert exited.value.exit_code == 129
    assert "interrupted by SIGHUP" in out.getvalue()


def test_a_second_signal_within_5_s_forces_the_exit_naming_what_is_left(
    capfd: pytest.CaptureFixture[str],
) -> None:
    signals, _ = stop_signals(iter([0.0, 6.0, 7.0]))
    cleanup: list[str] = []

    async def run() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # t=0: cancels
            await asyncio.Event().wait()
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # t=6: 6 s after the first, the cleanup goes on
            cleanup.append("still cleaning")
            os.kill(os.getpid(), signal.SIGHUP)  # t=7: within 5 s of the one before
            cleanup.append("never reached")

    with pytest.raises(Forced) as exited, signals:
        signals.run(run())
    assert exited.value.code == 129
    assert cleanup == ["still cleaning"]
    err = capfd.readouterr().err
    assert "SIGTERM: still cleaning up" in err
    assert "SIGHUP again: stopped at once" in err
    assert "the mesh's processes: PIDs 11 12" in err


def test_a_signal_inherited_as_ignored_stays_ignored() -> None:
    """`nohup mesh soak` must outlive its terminal."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signals, _ = stop_signals()
    with signals:
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_what_a_forced_exit_leaves_of_our_mesh_is_its_running_processes(tmp_path: Path) -> None:
    mesh = Mesh(state_dir=tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    mesh.procs.append(ChildProcess("gateway", child, tmp_path / "gateway.log"))
    try:
        [left] = mesh_left_behind(mesh)
        assert f"PIDs {child.pid} " in left and f"kill {child.pid}" in left
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    assert mesh_left_behind(mesh) == []


def test_what_a_forced_exit_leaves_on_a_target_is_its_faults_and_policy() -> None:
    target = Target(
        "127.0.0.1:1", "http://127.0.0.1:2", {"gateway": "127.0.0.1:3"}, {}, policy="full"
    )
    faults, policy = target_left_behind(target)
    assert "http://127.0.0.1:2" in faults and "`mesh fault reset`" in faults
    assert "instead of full" in policy and "`mesh restart SERVICE`" in policy
