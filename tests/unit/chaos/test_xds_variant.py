"""A variant with `xds: true` runs on the embedded mesh restarted into `mesh up --xds`, and the
next variant without it on the mesh restarted out of it; where that cannot be, it is skipped
with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment, problems
from grpc_resilience_mesh.chaos.experiment.model import Variant
from grpc_resilience_mesh.chaos.results import ExperimentResult, VariantResult
from grpc_resilience_mesh.chaos.run import xds_wiring
from grpc_resilience_mesh.chaos.run.measure import evaluate
from grpc_resilience_mesh.chaos.run.xds_wiring import wire_xds
from grpc_resilience_mesh.chaos.session.xds import XdsRunRefused, embedded_plane, under_xds
from grpc_resilience_mesh.launch.mesh import Mesh


class FakeMesh:
    """Records restart_services(policy, xds) and follows it, as the launcher does."""

    def __init__(self, xds: bool) -> None:
        self.xds: object | None = object() if xds else None
        self.restarts: list[tuple[str, bool | None]] = []

    def restart_services(self, policy: str, xds: bool | None = None) -> None:
        self.restarts.append((policy, xds))
        self.xds = object() if xds else None


def as_mesh(fake: FakeMesh) -> Mesh:
    return fake  # type: ignore[return-value]


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "mesh-xds"
    binary.write_text("built")
    monkeypatch.setattr(xds_wiring, "XDS_BINARY", binary)
    return binary


async def test_the_mesh_restarts_into_xds_for_an_xds_variant_and_out_for_the_next(
    built: Path,
) -> None:
    mesh = FakeMesh(xds=False)
    assert await wire_xds(as_mesh(mesh), Variant(name="full"), "p0") == ""
    assert mesh.restarts == []  # as it runs: no restart
    assert await wire_xds(as_mesh(mesh), Variant(name="xds-native", xds=True), "p1") == ""
    assert await wire_xds(as_mesh(mesh), Variant(name="xds-again", xds=True), "p2") == ""
    assert await wire_xds(as_mesh(mesh), Variant(name="full", xds=False), "p3") == ""
    assert mesh.restarts == [("p1", True), ("p3", False)]


async def test_an_xds_variant_is_skipped_naming_make_peers_without_the_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(xds_wiring, "XDS_BINARY", tmp_path / "absent")
    mesh = FakeMesh(xds=False)
    why = await wire_xds(as_mesh(mesh), Variant(name="xds-native", xds=True), "p")
    assert "make peers" in why and mesh.restarts == []


async def test_an_xds_variant_against_a_mesh_we_did_not_start_is_skipped(built: Path) -> None:
    why = await wire_xds(None, Variant(name="xds-native", xds=True), "p")
    assert "embedded mesh" in why


XDS_EXPERIMENTS = (
    "provider-outage",
    "replica-loss",
    "slow-replica",
    "pushback",
    "flapping-dependency",
)


@pytest.mark.parametrize("name", XDS_EXPERIMENTS)
def test_the_catalogues_xds_variant_is_valid_and_says_xds(name: str) -> None:
    path, exp = load_experiment(name)
    variants = [v for v in exp.variants if v.xds]
    assert variants and all(v.policy == "unprotected" for v in variants)
    assert problems(path, exp) == []


@pytest.mark.parametrize("name", XDS_EXPERIMENTS)
def test_a_skipped_xds_variant_decides_nothing_and_a_skipped_other_one_still_misses(
    name: str,
) -> None:
    """Without mesh-xds (no Go here) the experiment holds on the other variants' figures, and
    the report says why xds-native was not run; any other skipped variant is still a miss."""
    path, exp = load_experiment(name)
    result = ExperimentResult(name, path, exp)
    for variant in exp.variants:
        v = VariantResult(variant, variant.policy)
        v.skipped = f"{variant.name} skipped"
        result.variants.append(v)
    decided = {v.variant for v in evaluate(result)}
    xds = {v.name for v in exp.variants if v.xds}
    expected = {e.variant for e in exp.expectations}
    assert expected & xds  # the xds variants have bounds, left out here
    assert expected - xds == decided  # every other variant with a bound still misses
    assert not any(v.passed for v in evaluate(result))


def test_chaos_run_xds_puts_every_variant_under_xds_and_refuses_a_target(tmp_path: Path) -> None:
    path, exp = load_experiment("fault-sources")
    [(_, _, moved)] = under_xds([("fault-sources", path, exp)])
    assert [v.xds for v in exp.variants] == [False, False, True, True]
    assert [v.xds for v in moved.variants] == [True] * 4
    assert [v.faults for v in moved.variants] == [v.faults for v in exp.variants]
    with pytest.raises(XdsRunRefused, match="start it with `mesh up --xds`"):
        embedded_plane(tmp_path, "running")
