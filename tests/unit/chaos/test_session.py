"""The chaos run's session as an API (grpc_resilience_mesh/chaos/session/): called without the
CLI, it resolves, starts its own mesh, runs the rounds, writes each report, stops the mesh and
only then indexes its traces, telling a view each stage in order; bad input starts nothing, and
a mesh that fails to start is stopped and said. The soak's session shares the start and stop."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.report import report_md
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.session import mesh_scope, session, soak
from grpc_resilience_mesh.chaos.session.errors import MeshDidNotStart, SessionRefused
from grpc_resilience_mesh.chaos.session.report_writer import ReportWriter
from grpc_resilience_mesh.chaos.session.session import SessionOptions, run_session
from grpc_resilience_mesh.chaos.session.soak import soak_session
from grpc_resilience_mesh.chaos.soak import SoakConfig, SoakResult
from grpc_resilience_mesh.launch.processes import LaunchError
from tests.unit.chaos.fake_mesh import FakeMesh
from tests.unit.chaos.render_fixtures import demo_result


class Replay:
    """A runner that returns recorded results (no load generator, no mesh)."""

    def __init__(self, target: Target, progress: Any = None) -> None:
        self.capacity: dict[tuple[str, ...], dict[str, float]] = {("home",): {"capacity_per_s": 9}}
        self.remeasured: set[tuple[str, ...]] = set()
        self.progress = progress
        self.cpu = self
        self.generator = self
        self.kind = "python"

    def line(self, kind: str) -> str:
        return f"load generator ({kind}): replayed"

    async def run(self, name: str, path: Path, exp: Experiment) -> ExperimentResult:
        self.progress(f"{name}: fault", 1, 1)
        return demo_result(name)

    async def close(self) -> None:
        """No load generator to end."""


class Seen:
    """A view that notes what it is told, and whether the mesh ran when it was."""

    def __init__(self) -> None:
        self.said: list[tuple[Any, ...]] = []

    def _mesh_stopped(self) -> bool:
        return all(m.stopped for m in FakeMesh.made)

    def starting_mesh(self) -> AbstractContextManager[object]:
        self.said.append(("starting",))
        return nullcontext()

    def mesh_started(self, took_s: float) -> None:
        self.said.append(("started",))

    def stopping_mesh(self) -> AbstractContextManager[object]:
        self.said.append(("stopping", "mesh stopped" if self._mesh_stopped() else "mesh up"))
        return nullcontext()

    @contextmanager
    def rounds(self, experiments: list[Experiment]) -> Iterator[Seen]:
        self.said.append(("rounds", len(experiments)))
        yield self

    def indexing_traces(self) -> AbstractContextManager[object]:
        self.said.append(("indexing", "mesh stopped" if self._mesh_stopped() else "mesh up"))
        return nullcontext()

    def experiment(self, n: int, total: int, name: str, round_: int, repeat: int) -> None:
        self.said.append(("experiment", n, total, name, round_))

    def step(self, label: str, done: int, total: int) -> None:
        self.said.append(("step", label))

    def ran(self, result: ExperimentResult) -> None:
        self.said.append(("ran", result.name))

    def finish(self) -> None:
        self.said.append(("finish",))


@pytest.fixture
def no_mesh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mesh_scope, "Mesh", FakeMesh)
    monkeypatch.setattr(session, "Runner", Replay)
    monkeypatch.setattr(session, "private_umask", lambda: None)  # the test process's umask
    monkeypatch.setattr(session, "ReportWriter", functools.partial(ReportWriter, inline=True))
    monkeypatch.setattr(report_md, "plot", lambda *args: [])  # the figures are test_plots.py's
    monkeypatch.setenv("MESH_LOADGEN", "python")
    FakeMesh.made = []


@pytest.mark.usefixtures("no_mesh")
def test_a_session_runs_the_rounds_on_its_own_mesh_and_indexes_after_it_stopped(
    tmp_path: Path,
) -> None:
    view = Seen()
    options = SessionOptions(
        ["provider-outage", "worker-crash"],
        reports=tmp_path / "reports",
        state_dir=tmp_path / "state",
        repeat=2,
    )
    ran = run_session(options, view)
    assert [r.name for r in ran.results] == ["provider-outage", "worker-crash"]
    assert [len(r.repeats) for r in ran.results] == [2, 2]
    assert view.said[:3] == [("starting",), ("started",), ("rounds", 4)]
    assert [s[1:] for s in view.said if s[0] == "experiment"] == [
        (1, 4, "provider-outage", 1),
        (2, 4, "worker-crash", 1),
        (3, 4, "provider-outage", 2),
        (4, 4, "worker-crash", 2),
    ]
    assert view.said[3:7] == [
        ("experiment", 1, 4, "provider-outage", 1),
        ("step", "provider-outage: fault"),
        ("ran", "provider-outage"),
        ("finish",),
    ]
    # Told while the mesh stops (a piped log prints through it), then indexing after.
    assert view.said[-2:] == [("stopping", "mesh up"), ("indexing", "mesh stopped")]
    assert [m.stopped for m in FakeMesh.made] == [True]
    assert (tmp_path / "reports" / "worker-crash" / "report.md").is_file()
    assert ran.start_s is not None and ran.generator == "load generator (python): replayed"
    assert ran.capacity == {("home",): {"capacity_per_s": 9}}


@pytest.mark.usefixtures("no_mesh")
def test_against_a_running_mesh_nothing_is_started_stopped_or_indexed(tmp_path: Path) -> None:
    view = Seen()
    target = "toxiproxy=http://127.0.0.1:1,gateway=127.0.0.1:1"
    options = SessionOptions(["provider-outage"], target, reports=tmp_path, state_dir=tmp_path)
    ran = run_session(options, view)
    assert [r.name for r in ran.results] == ["provider-outage"] and ran.start_s is None
    assert FakeMesh.made == []
    about_the_mesh = ("starting", "started", "stopping", "indexing")
    assert [s[0] for s in view.said if s[0] in about_the_mesh] == []


@pytest.mark.usefixtures("no_mesh")
@pytest.mark.parametrize(
    ("names", "target", "said"),
    [
        ([], None, "name at least one experiment"),
        (["no-such-experiment"], None, "no-such-experiment"),
        (["provider-outage"], "gateway=127.0.0.1:1,port=9", "unknown key 'port'"),
    ],
)
def test_bad_input_is_refused_before_anything_starts(
    tmp_path: Path, names: list[str], target: str | None, said: str
) -> None:
    with pytest.raises(SessionRefused, match=said):
        run_session(SessionOptions(names, target, tmp_path, tmp_path), Seen())
    assert FakeMesh.made == []


class BrokenMesh(FakeMesh):
    def start(self) -> None:
        raise LaunchError("gateway: exited with 1")


@pytest.mark.usefixtures("no_mesh")
def test_a_mesh_that_fails_to_start_is_stopped_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mesh_scope, "Mesh", BrokenMesh)
    with pytest.raises(MeshDidNotStart, match="could not start the mesh: gateway: exited with 1"):
        run_session(SessionOptions(["provider-outage"], None, tmp_path, tmp_path), Seen())
    assert [m.stopped for m in FakeMesh.made] == [True]


def test_the_soak_starts_soaks_and_stops_its_mesh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    soaked: list[Any] = []

    async def recorded(mesh: FakeMesh, config: SoakConfig, tick: Any) -> SoakResult:
        soaked.append((mesh.stopped, tick))
        return SoakResult(config)

    monkeypatch.setattr(mesh_scope, "Mesh", FakeMesh)
    monkeypatch.setattr(soak, "run_soak", recorded)
    FakeMesh.made = []
    config = SoakConfig(duration_s=1)
    assert soak_session(config, tmp_path).config is config
    assert soaked == [(False, None)] and [m.stopped for m in FakeMesh.made] == [True]
    monkeypatch.setattr(mesh_scope, "Mesh", BrokenMesh)
    with pytest.raises(MeshDidNotStart) as err:
        soak_session(config, tmp_path)
    assert err.value.cause == "gateway: exited with 1"
    assert [m.stopped for m in FakeMesh.made] == [True, True], "the broken one stopped too"
