"""The kill switch: every fault is removed on every exit path of the runner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e

LONG = """
title: rollback probe
hypothesis: faults never outlive the run
steady_state:
  load: {rpc: [home], requests: 4, concurrency: 1}
faults:
  - {type: toxic, edge: gateway_to_recommendation, toxic: latency, attributes: {latency: 50}}
  - {type: app_fault, service: profile, method: GetProfile, error_rate: {rate}, code: UNAVAILABLE}
load: {rpc: [home], requests: 20000, concurrency: 2, think_s: 0.01, max_duration_s: 30}
abort: {error_rate_above: 0.5, for_s: 0.5}
variants: [{name: full}]
"""


def experiment(tmp_path: Path, rate: float) -> Path:
    path = tmp_path / "rollback.yaml"
    path.write_text(LONG.replace("{rate}", str(rate)))
    return path


def faults_left(mesh: Mesh) -> list[str]:
    assert mesh.state is not None and mesh.state.toxiproxy
    left = []
    for name, proxy in (
        ToxiproxyClient(mesh.state.toxiproxy, token=mesh.state.admin_token).proxies().items()
    ):
        if not proxy["enabled"]:
            left.append(f"{name} disabled")
        left += [f"{name}: {t['name']}" for t in proxy["toxics"]]
    for service, addrs in mesh.state.services.items():
        with grpc.insecure_channel(addrs["admin"]) as channel:
            listed = admin_pb2_grpc.FaultAdminStub(channel).ListFaults(
                admin_pb2.ListFaultsRequest(),
                timeout=2,
                metadata=admin_metadata(mesh.state.admin_token),
            )
        left += [f"{service}: {f.method}" for f in listed.faults]
    return left


async def test_a_crash_of_the_load_midway_removes_every_fault(
    mesh: Mesh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, exp = load_experiment(str(experiment(tmp_path, 0.0)))
    runner = Runner(Target.from_mesh(mesh))
    real_load = runner._load
    seen_during: list[list[str]] = []

    async def crashing_load(label, spec, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "under fault" not in label:
            return await real_load(label, spec, *args, **kwargs)
        seen_during.append(faults_left(mesh))
        raise RuntimeError("the load generator crashed")

    monkeypatch.setattr(runner, "_load", crashing_load)
    result = await runner.run("rollback", path, exp)
    # both faults were on while the load ran: the toxic on every replica's proxy of the edge,
    # the app fault on every replica of profile
    assert sorted(seen_during[0]) == [
        "gateway_to_recommendation-2: exp0_latency_downstream",
        "gateway_to_recommendation: exp0_latency_downstream",
        "profile-2: /mesh.v1.ProfileService/GetProfile",
        "profile: /mesh.v1.ProfileService/GetProfile",
    ]
    assert "the load generator crashed" in result.aborted
    assert not result.held
    assert faults_left(mesh) == []


async def test_the_abort_condition_stops_the_load_and_removes_faults(
    mesh: Mesh, tmp_path: Path
) -> None:
    path, exp = load_experiment(str(experiment(tmp_path, 1.0)))
    result = await Runner(Target.from_mesh(mesh)).run("rollback", path, exp)
    fault = result.variants[0].phases["fault"]
    assert fault.metrics["aborted"] == 1.0
    assert fault.metrics["requests"] < 20000
    assert fault.metrics["error_rate"] > 0.5
    assert faults_left(mesh) == []
    assert result.variants[0].steady_after["error_rate"] == 0.0


def test_ctrl_c_removes_every_fault(mesh: Mesh, tmp_path: Path) -> None:
    state = mesh.state
    assert state is not None
    target = (
        f"toxiproxy={state.toxiproxy},gateway={state.gateway}"
        + (f",api_key={state.api_key}" if state.api_key else "")
        + (f",admin_token={state.admin_token}" if state.admin_token else "")
        + "".join(f",admin.{s}={a['admin']}" for s, a in state.services.items())
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grpc_resilience_mesh.cli",
            "chaos",
            "run",
            str(experiment(tmp_path, 0.0)),
            "--target",
            target,
            "--reports",
            str(tmp_path / "reports"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ},
        # Ctrl-C reaches a foreground process; a suite started in the background by a
        # non-interactive shell inherits SIGINT ignored, and the run would never see it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:

        def faults_on() -> bool:
            assert proc.poll() is None, proc.stdout.read().decode()  # type: ignore[union-attr]
            return len(faults_left(mesh)) >= 2

        wait_until(faults_on, 30, "the faults go on", interval_s=0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out.decode()
    assert "every fault was removed" in out.decode()
    assert faults_left(mesh) == []
