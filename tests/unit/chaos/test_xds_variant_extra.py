"""In an install without the [xds] extra (no grpcio-csds, whose CSDS the services serve under
xDS), `mesh chaos run --xds` is refused (exit 2) before a mesh starts, and an `xds: true` variant
is skipped, as without mesh-xds; both name the install."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import pytest

from grpc_resilience_mesh.chaos.experiment.model import Variant
from grpc_resilience_mesh.chaos.run import xds_wiring
from grpc_resilience_mesh.chaos.run.xds_wiring import wire_xds
from grpc_resilience_mesh.chaos.session import xds as session_xds
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.settings import XDS_EXTRA


class FakeMesh:
    """Records restart_services(policy, xds), as the launcher would run them."""

    xds: object | None = None

    def __init__(self) -> None:
        self.restarts: list[tuple[str, bool | None]] = []

    def restart_services(self, policy: str, xds: bool | None = None) -> None:
        self.restarts.append((policy, xds))


@pytest.fixture
def built_without_csds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mesh-xds built, grpcio-csds not installed."""
    binary = tmp_path / "mesh-xds"
    binary.write_text("built")
    monkeypatch.setattr(xds_wiring, "XDS_BINARY", binary)
    monkeypatch.setattr(session_xds, "XDS_BINARY", binary)
    monkeypatch.setitem(sys.modules, "grpc_csds", None)


@pytest.mark.usefixtures("built_without_csds")
def test_chaos_run_xds_without_grpcio_csds_is_refused_naming_the_extra(tmp_path: Path) -> None:
    with pytest.raises(session_xds.XdsRunRefused) as refused:
        session_xds.embedded_plane(tmp_path, None)
    assert XDS_EXTRA in str(refused.value)


@pytest.mark.usefixtures("built_without_csds")
async def test_an_xds_variant_without_grpcio_csds_is_skipped_naming_the_extra() -> None:
    fake = FakeMesh()
    mesh = cast(Mesh, fake)
    why = await wire_xds(mesh, Variant(name="xds-native", xds=True), "p")
    assert XDS_EXTRA in why and fake.restarts == []
    # a variant without xds runs as the mesh does: nothing to restart, nothing missing
    assert await wire_xds(mesh, Variant(name="full"), "p") == ""
