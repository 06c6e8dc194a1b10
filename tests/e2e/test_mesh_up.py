"""`mesh up` as a user runs it: a subprocess, real calls through the gateway, a clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.e2e.mesh_up_process import MESH, MeshUp, pid_alive, running_mesh_up

pytestmark = pytest.mark.e2e


def test_mesh_up_serves_calls_and_stops_cleanly(mesh_up: MeshUp) -> None:
    state = mesh_up.state
    for name, addrs in state["services"].items():
        with grpc.insecure_channel(addrs["listen"]) as ch:
            reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=2)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name

    with grpc.insecure_channel(state["gateway"]) as ch:
        stub = gateway_pb2_grpc.GatewayStub(ch)
        md = mesh_up.metadata()
        home = stub.GetHome(gateway_pb2.GetHomeRequest(user_id="u-0001"), timeout=5, metadata=md)
        assert home.profile.user_id == "u-0001"
        assert len(home.recommendations) == 10
        assert list(home.degraded) == []
        out = stub.Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0001",
                amount_cents=1250,
                currency="USD",
                idempotency_key="e2e-checkout-0001",
            ),
            timeout=5,
            metadata=md,
        )
        assert out.status == payment_pb2.CHARGE_STATUS_SUCCEEDED
        assert out.charge_id.startswith("ch_")

    env = {**os.environ, "MESH_STATE_DIR": str(mesh_up.state_dir)}
    cli = subprocess.run(
        [*MESH, "call", "home", "--user", "u-0002", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert json.loads(cli.stdout)["profile"]["user_id"] == "u-0002"

    output = mesh_up.stop()
    assert mesh_up.proc.returncode == 0, output
    assert "stopped" in output
    for name, pid in state["pids"].items():
        assert not pid_alive(pid), f"{name} (pid {pid}) is still running"
    assert not (mesh_up.state_dir / "mesh.json").exists()


def test_a_closed_terminal_sighup_stops_mesh_up_and_every_process(tmp_path: Path) -> None:
    """SIGHUP (the terminal closed, an ssh session dropped) stops the mesh as SIGTERM does:
    before, it killed `mesh up` alone and left every service running on its ports."""
    with running_mesh_up(tmp_path / "var") as running:
        output = running.stop(signal.SIGHUP)
        assert running.proc.returncode == 0, output
        assert "stopped" in output
        for name, pid in running.state["pids"].items():
            assert not pid_alive(pid), f"{name} (pid {pid}) is still running"


def test_mesh_up_reports_a_service_that_fails_and_leaves_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "var"
    env = {**os.environ, "MESH_POLICY": "no-such-preset"}
    proc = subprocess.run(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir), "--policy", "no-such-preset"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "mesh up failed" in proc.stdout
    assert "no-such-preset" in proc.stdout
    assert "nothing was left running" in proc.stdout
    assert _processes_mentioning(str(state_dir)) == []


def _processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line or environment mentions `text` (e.g. a mesh's state dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in blob and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found
