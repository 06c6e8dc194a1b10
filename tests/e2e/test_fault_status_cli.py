"""`mesh fault`, `mesh status` and `mesh watch` against a running `mesh up`, as typed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.mesh_up_process import MESH, MeshUp

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def test_faults_added_listed_shown_in_status_and_reset(mesh_up: MeshUp) -> None:
    added = mesh_up.mesh("fault", "add", "gateway_to_profile", "-t", "latency", "-a", "latency=50")
    assert added.returncode == 0, added.stderr
    assert "Added downstream latency toxic 'cli_latency_downstream'" in added.stdout
    app = mesh_up.mesh(
        "fault", "add", "--service", "recommendation", "--method", "Recommend", "--rate", "1"
    )
    assert app.returncode == 0, app.stderr

    listed = json.loads(mesh_up.mesh("fault", "list", "--json").stdout)
    assert [(t["edge"], t["type"], t["owner"]) for t in listed["toxics"]] == [
        ("gateway_to_profile", "latency", "mesh fault")
    ]
    assert [(f["service"], f["method"], f["owner"]) for f in listed["app_faults"]] == [
        ("recommendation", "/mesh.v1.RecommendationService/Recommend", "mesh fault")
    ]

    status = mesh_up.mesh("status", "--window", "0.2", "--json")
    assert status.returncode == 0, status.stderr
    edges = {e["name"]: e for e in json.loads(status.stdout)["edges"]}
    assert edges["gateway_to_profile"]["toxics"][0]["attributes"] == {"latency": 50, "jitter": 0}
    assert edges["gateway_to_recommendation"]["app_faults"][0]["code"] == "UNAVAILABLE"
    assert edges["gateway_to_recommendation"]["stats"]["bulkhead_limit"] > 0

    # Piped, as here: every refresh printed (a live view would print only once it ended).
    watched = mesh_up.mesh("watch", "--interval", "0.5", "--count", "2")
    assert watched.returncode == 0, watched.stderr
    assert "gateway_to_profile" in watched.stdout
    assert watched.stdout.count("mesh watch at ") == 2, watched.stdout

    removed = mesh_up.mesh("fault", "rm", "gateway_to_profile", "-n", "cli_latency_downstream")
    assert removed.returncode == 0 and "Removed toxic" in removed.stdout
    assert mesh_up.mesh("fault", "reset").returncode == 0
    listed = json.loads(mesh_up.mesh("fault", "list", "--json").stdout)
    assert listed["toxics"] == [] and listed["app_faults"] == []

    bad = mesh_up.mesh("fault", "add", "no_such_edge", "-t", "latency")
    assert bad.returncode == 2 and "no_such_edge" in bad.stdout + bad.stderr
    bad = mesh_up.mesh("fault", "add", "--service", "nope", "--method", "X")
    assert bad.returncode == 2 and "unknown service 'nope'" in bad.stdout + bad.stderr


def test_without_a_running_mesh_each_command_exits_2_saying_where_it_looked(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "MESH_STATE_DIR": str(tmp_path)}
    for args in (["status"], ["watch", "--count", "1"], ["fault", "list"]):
        done = subprocess.run([*MESH, *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2
        assert str(tmp_path / "mesh.json") in " ".join((done.stdout + done.stderr).split())
