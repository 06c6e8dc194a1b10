"""`mesh fault` and `mesh status` name the replica proxies they touch, show each replica, name
the policy the services run (not the one `mesh up` started with) and stay whole at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from grpc_resilience_mesh.chaos.experiment.variant_policy import policy_text
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc
from tests.e2e.mesh_up_process import MESH, MeshUp
from tests.support.admin_channel import admin_channel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def at_80_columns(mesh_up: MeshUp, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MESH_STATE_DIR": str(mesh_up.state_dir), "COLUMNS": "80"}
    return subprocess.run([*MESH, *args], capture_output=True, text=True, env=env, timeout=60)


def test_replica_proxies_are_named_and_each_replica_is_shown(mesh_up: MeshUp) -> None:
    both = mesh_up.mesh("fault", "add", "gateway_to_recommendation", "-t", "latency")
    assert both.returncode == 0, both.stderr
    assert "gateway_to_recommendation, gateway_to_recommendation-2" in both.stdout
    one = mesh_up.mesh("fault", "add", "gateway_to_profile-2", "-t", "latency", "-a", "latency=900")
    assert one.returncode == 0, one.stderr
    assert "on proxy 'gateway_to_profile-2' only" in one.stdout

    listed = json.loads(mesh_up.mesh("fault", "list", "--json").stdout)
    on = {t["edge"]: t["proxies"] for t in listed["toxics"]}
    assert on == {
        "gateway_to_profile": ["gateway_to_profile-2"],
        "gateway_to_recommendation": ["gateway_to_recommendation", "gateway_to_recommendation-2"],
    }
    status = json.loads(mesh_up.mesh("status", "--window", "0.2", "--json").stdout)
    replicas = {r["name"]: r for r in status["replicas"]}
    slowed = {
        name: [p["name"] for p in r["proxies"] if p["toxics"]] for name, r in replicas.items()
    }
    assert slowed == {
        "profile": [],
        "profile-2": ["gateway_to_profile-2"],
        "recommendation": ["gateway_to_recommendation"],
        "recommendation-2": ["gateway_to_recommendation-2"],
    }
    for args in (("status", "--window", "0.2"), ("fault", "list")):
        shown = at_80_columns(mesh_up, *args)
        assert shown.returncode == 0, shown.stderr
        assert "…" not in shown.stdout, shown.stdout  # nothing cut
        assert all(len(line) <= 80 for line in shown.stdout.splitlines()), shown.stdout
    assert "gateway_to_profile-2" in at_80_columns(mesh_up, "fault", "list").stdout


def test_status_names_the_policy_the_services_run(mesh_up: MeshUp) -> None:
    state = mesh_up.saved_state()
    text = policy_text("retry-only")
    for addrs in state["services"].values():  # every process, as an experiment's variant does
        admin = admin_channel(addrs["admin"], state["admin_token"])
        admin_pb2_grpc.PolicyAdminStub(admin).SetPolicy(
            admin_pb2.SetPolicyRequest(yaml=text), timeout=10
        )
        admin.close()
    assert mesh_up.saved_state()["policy"] == "full"  # what mesh up started with
    status = at_80_columns(mesh_up, "status", "--window", "0.2")
    assert status.returncode == 0, status.stderr
    assert "mesh status (policy retry-only;" in status.stdout, status.stdout
    assert json.loads(mesh_up.mesh("status", "--json").stdout)["policy"] == "retry-only"
