"""Where the extension finds the mesh: the configuration's mesh_state, else the injected
environment's MESH_STATE_FILE, else MESH_STATE_DIR, read as every `mesh` command reads them."""

from __future__ import annotations

from pathlib import Path

from chaosgrpcmesh.mesh import state_file

from grpc_resilience_mesh.chaos.export.chaostoolkit import STATE_ENV
from grpc_resilience_mesh.client.state import STATE_PATH


def test_the_configuration_comes_first_then_the_state_file_then_the_state_dir(
    tmp_path: Path,
) -> None:
    elsewhere = {"MESH_STATE_DIR": "/elsewhere"}
    assert state_file({"mesh_state": str(tmp_path)}, elsewhere) == tmp_path / "mesh.json"
    given = tmp_path / "up.json"
    assert state_file(None, {"MESH_STATE_FILE": str(given), **elsewhere}) == given
    assert state_file(None, {"MESH_STATE_DIR": str(tmp_path)}) == tmp_path / "mesh.json"
    assert state_file(None, {"MESH_STATE_DIR": " ", "MESH_STATE_FILE": ""}) == Path(
        "var/mesh.json"
    ), "blank is unset"


def test_exported_experiments_name_the_variable_the_extension_reads() -> None:
    assert STATE_ENV == STATE_PATH.name
