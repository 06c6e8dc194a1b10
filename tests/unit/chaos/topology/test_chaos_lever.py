"""The machine's chaos lever: pulled, seen, released; a catalogue run refused while it is pulled,
and a catalogue fault phase ended (faults rolled back) within a second of a pull."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.model import Abort, LoadSpec
from grpc_resilience_mesh.chaos.run.kill_switch import KillSwitch
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.session import mesh_scope, session
from grpc_resilience_mesh.chaos.topology import lever
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.loadgen.outcomes import LoadResult, Outcome
from tests.unit.chaos.fake_mesh import FakeMesh


@pytest.fixture
def lever_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lever"
    monkeypatch.setenv(lever.LEVER_ENV, str(path))
    return path


def test_pull_release_and_pulled(lever_file: Path) -> None:
    assert lever.lever_path() == lever_file
    assert lever.pulled() is None
    assert lever.pull("db migration in progress") == lever_file
    assert lever.pulled() == "db migration in progress"
    lever.pull("second thoughts")
    assert lever.pulled() == "second thoughts"
    assert lever.release() is True
    assert lever.pulled() is None
    assert lever.release() is False
    assert not lever_file.exists()


def test_the_default_lever_is_in_the_users_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    default = Path("/home/someone/.local/state/grpc-resilience-mesh/chaos-lever")
    assert lever.lever_path({}) == default
    assert lever.lever_path({lever.LEVER_ENV: " "}) == default
    assert lever.lever_path({lever.LEVER_ENV: "/x/lever"}) == Path("/x/lever")


def test_a_refusal_names_the_lever_and_the_way_out(lever_file: Path) -> None:
    lever.pull("game day over")
    with pytest.raises(lever.LeverPulled) as caught:
        lever.refuse_if_pulled()
    text = str(caught.value)
    assert str(lever_file) in text and "game day over" in text
    assert "mesh chaos stop --release" in text


async def test_watch_lever_sees_a_pull_within_its_period(lever_file: Path) -> None:
    seen: list[str] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(lever.watch_lever(seen.append, stop, every_s=0.02))
    await asyncio.sleep(0.05)
    assert seen == [] and not watcher.done()
    lever.pull("now")
    await asyncio.wait_for(watcher, 1.0)
    assert seen == ["now"]


class FakeInjector:
    """The runner's injector: a fault on from the schedule's start until reset_all."""

    def __init__(self) -> None:
        self.observer: object = None
        self.on = False
        self.scheduled = 0
        self.off_at: float | None = None

    async def run_schedule(self, faults: object, stop: asyncio.Event, ready: asyncio.Event) -> None:
        self.scheduled += 1
        self.on = True
        ready.set()
        await stop.wait()

    async def reset_all(self) -> None:
        if self.on:
            self.on, self.off_at = False, time.monotonic()

    def return_left_s(self, watch_s: float, now: float) -> float:
        return 0.0


WHILE_ON = SimpleNamespace(observe=lambda *args: None)
"""The runner's AttemptsWhileOn, which this test does not read."""


def _runner() -> tuple[Runner, FakeInjector]:
    runner = object.__new__(Runner)
    injector = FakeInjector()
    runner.injector = injector  # type: ignore[assignment]

    async def load(
        label: str, spec: LoadSpec, stop: asyncio.Event | None, on: Callable[[Outcome], None] | None
    ) -> LoadResult:
        assert stop is not None
        await asyncio.wait_for(stop.wait(), 30.0)  # a long load, ended only by `stop`
        return LoadResult()

    runner._load = load  # type: ignore[method-assign,assignment]
    return runner, injector


async def test_a_pull_ends_a_catalogue_fault_phase_within_a_second(lever_file: Path) -> None:
    runner, injector = _runner()
    kill = KillSwitch(Abort(), asyncio.Event())
    under = runner._load_under([], "fault", LoadSpec(), WHILE_ON, kill)  # type: ignore[arg-type]
    phase = asyncio.create_task(under)
    for _ in range(200):
        if injector.on or phase.done():
            break
        await asyncio.sleep(0.01)
    assert injector.on, phase.done() and phase.exception()
    pulled_at = time.monotonic()
    lever.pull("stop the game day")
    with pytest.raises(lever.LeverPulled, match="stop the game day"):
        await asyncio.wait_for(phase, 5.0)
    assert injector.off_at is not None and not injector.on
    assert injector.off_at - pulled_at < 1.0


async def test_a_pulled_lever_injects_nothing(lever_file: Path) -> None:
    runner, injector = _runner()
    lever.pull("frozen")
    kill = KillSwitch(Abort(), asyncio.Event())
    with pytest.raises(lever.LeverPulled):
        await runner._load_under([], "fault", LoadSpec(), WHILE_ON, kill)  # type: ignore[arg-type]
    assert injector.scheduled == 0


def test_mesh_chaos_run_is_refused_while_the_lever_is_pulled(
    lever_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "private_umask", lambda: None)
    monkeypatch.setattr(mesh_scope, "Mesh", FakeMesh)
    FakeMesh.made = []
    lever.pull("incident 42")
    argv = ["chaos", "run", "provider-outage", "--reports", str(tmp_path / "reports")]
    argv += ["--state-dir", str(tmp_path / "state")]
    result = CliRunner().invoke(app, argv, env={"MESH_LOADGEN": "python", "COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "incident 42" in text and str(lever_file) in text
    assert "mesh chaos stop --release" in text
    assert FakeMesh.made == [], "nothing was started"
