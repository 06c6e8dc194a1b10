"""Where mesh-xds is not built, the demo's session leaves the `xds: true` variants out of what
it runs (and their expectations), names them, and `mesh demo` prints them under its totals with
the command that adds them; `mesh chaos run` (no leave_out_xds) runs them, to be skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session import session
from grpc_resilience_mesh.chaos.session.session import SessionOptions, SessionResult, run_session
from grpc_resilience_mesh.cli import chaos_run
from tests.unit.chaos.test_session import Replay, Seen, no_mesh  # noqa: F401 - the fixture

RAN: dict[str, list[str]] = {}


class Recorder(Replay):
    """The replaying runner, noting each experiment's variants as it was handed them."""

    async def run(self, name: str, path: Path, exp: Experiment) -> ExperimentResult:
        RAN[name] = [v.name for v in exp.variants]
        return await super().run(name, path, exp)


@pytest.mark.usefixtures("no_mesh")
@pytest.mark.parametrize("built", [False, True])
def test_the_demo_leaves_out_xds_variants_only_without_mesh_xds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: bool
) -> None:
    binary = tmp_path / "mesh-xds"
    if built:
        binary.write_text("")
    monkeypatch.setattr(session, "XDS_BINARY", binary)
    monkeypatch.setattr(session, "Runner", Recorder)
    RAN.clear()
    options = SessionOptions(
        ["fault-sources", "deadline-budget"],
        reports=tmp_path / "reports",
        state_dir=tmp_path / "state",
        short_sweeps=True,
        leave_out_xds=True,
    )
    ran = run_session(options, Seen())
    if built:
        assert ran.left_out == [] and "xds-abort" in RAN["fault-sources"]
    else:
        assert ran.left_out == ["fault-sources/xds-abort"]
        assert RAN["fault-sources"] == ["toxiproxy-latency", "app-fault-abort"]
    assert "deadline-budget" in RAN


@pytest.mark.usefixtures("no_mesh")
def test_a_chaos_run_keeps_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "XDS_BINARY", tmp_path / "absent")
    monkeypatch.setattr(session, "Runner", Recorder)
    options = SessionOptions(["fault-sources"], reports=tmp_path, state_dir=tmp_path)
    assert run_session(options, Seen()).left_out == []
    assert "xds-abort" in RAN["fault-sources"]


def test_the_totals_name_what_was_left_out_and_how_to_add_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = SessionResult([], 1.0, left_out=["fault-sources/xds-abort"])
    chaos_run._summary(ran, 1, Path("reports"))
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "left out, mesh-xds not built: fault-sources/xds-abort; `make xds-plane` builds it" in out
    )
