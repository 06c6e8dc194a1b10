"""`--target`: the running mesh from its state file, or the addresses spelled out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.run.target import Target

SERVICES = ("profile", "recommendation", "payment", "notification", "gateway")


def state(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    """What `mesh up` writes to mesh.json (grpc_resilience_mesh/client/state.py MeshState), ports
    made up."""
    doc: dict[str, Any] = {
        "gateway": "127.0.0.1:50051",
        "toxiproxy": "http://127.0.0.1:8474",
        "services": {
            name: {
                "listen": f"127.0.0.1:{50052 + i}",
                "admin": f"127.0.0.1:{50152 + i}",
                "metrics": f"http://127.0.0.1:{9464 + i}/metrics",
            }
            for i, name in enumerate(SERVICES)
        },
        "proxies": {},
        "pids": {"gateway": os.getpid()},
        "policy": "retry-only",
        "state_dir": str(tmp_path / "var"),
        "api_key": "k-123",
        "extra": {"redis": "127.0.0.1:6390"},
        "added_by_a_newer_launcher": {"anything": 1},
    }
    doc.update(changes)
    return doc


def write_state(tmp_path: Path, **changes: Any) -> Path:
    folder = tmp_path / "var"
    folder.mkdir(exist_ok=True)
    path = folder / "mesh.json"
    path.write_text(json.dumps(state(tmp_path, **changes)))
    return path


def test_a_state_file_gives_every_address_and_the_key(tmp_path: Path) -> None:
    target = Target.parse(str(write_state(tmp_path)))
    assert target.gateway == "127.0.0.1:50051"
    assert target.toxiproxy == "http://127.0.0.1:8474"
    assert target.api_key == "k-123"
    assert set(target.admin) == set(SERVICES) == set(target.metrics)
    assert target.admin["payment"] == "127.0.0.1:50154"
    assert target.metrics["gateway"] == "http://127.0.0.1:9468/metrics"
    assert target.policy == "retry-only", "put back after the variants"
    assert target.state_dir == tmp_path / "var"
    assert target.mesh is None


def test_running_means_the_default_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_state(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert Target.parse("running", environ={}).admin["profile"] == "127.0.0.1:50152"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mesh.json").write_text(json.dumps(state(tmp_path, gateway="127.0.0.1:1")))
    moved = Target.parse("running", environ={"MESH_STATE_DIR": str(elsewhere)})
    assert moved.gateway == "127.0.0.1:1"


def test_the_folder_holding_the_state_file_will_do(tmp_path: Path) -> None:
    write_state(tmp_path)
    assert Target.parse(str(tmp_path / "var")).api_key == "k-123"


def test_a_direct_mesh_has_no_toxiproxy(tmp_path: Path) -> None:
    assert Target.parse(str(write_state(tmp_path, toxiproxy=None))).toxiproxy is None


def test_no_state_file_asks_whether_mesh_up_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no such file; is `mesh up` running\?"):
        Target.parse("running", environ={"MESH_STATE_DIR": str(tmp_path)})


def test_a_file_that_is_not_a_state_file_is_not_quoted(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$hunter2:19000:0:99999:7:::\n")
    with pytest.raises(ValueError, match="not a mesh state file") as info:
        Target.parse(str(secret))
    assert "hunter2" not in str(info.value)
    secret.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="not a mesh state file"):
        Target.parse(str(secret))
    secret.write_text(json.dumps({"gateway": "hunter2"}))
    with pytest.raises(ValueError, match="no gateway, no services") as info:
        Target.parse(str(secret))
    assert "hunter2" not in str(info.value)


def test_a_state_file_left_by_a_mesh_that_died_is_refused(tmp_path: Path) -> None:
    path = write_state(tmp_path, pids={"gateway": 2**31 - 1})  # above any pid_max
    with pytest.raises(ValueError, match="that mesh is not running"):
        Target.parse(str(path))


def test_addresses_spelled_out_still_work() -> None:
    target = Target.parse(
        "gateway=127.0.0.1:50051,toxiproxy=http://127.0.0.1:8474,api_key=k,"
        "admin.profile=127.0.0.1:50152,metrics.profile=http://127.0.0.1:9465/metrics"
    )
    assert target.admin == {"profile": "127.0.0.1:50152"}
    assert target.metrics == {"profile": "http://127.0.0.1:9465/metrics"}
    assert target.policy is None, "unknown: nothing to put back"
    with pytest.raises(ValueError, match="unknown key 'colour'"):
        Target.parse("gateway=127.0.0.1:1,colour=red")
