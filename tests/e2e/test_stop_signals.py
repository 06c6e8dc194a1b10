"""SIGTERM and SIGHUP to `mesh chaos run`, `mesh demo` and `mesh soak` clean up as Ctrl-C does:
faults removed, the policy put back, the run's own mesh stopped, exit 128 + the signal."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any, cast

import pytest

from grpc_resilience_mesh.chaos.soak import ledger_keys
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc
from tests.e2e.mesh_up_process import MESH, MeshUp, pid_alive, serving
from tests.support.admin_channel import admin_channel
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e

FAULTY = """
title: signal probe
hypothesis: a signal leaves no fault and no policy behind
steady_state:
  load: {rpc: [home], requests: 4, concurrency: 1}
faults:
  - {type: toxic, edge: gateway_to_recommendation, toxic: latency, attributes: {latency: 1500}}
  - {type: app_fault, service: recommendation, method: Recommend, error_rate: 1.0,
     code: UNAVAILABLE}
load: {rpc: [home], requests: 20000, concurrency: 2, think_s: 0.01, max_duration_s: 60}
variants: [{name: retry-only, policy: retry-only}]
"""


def faults_left(state: dict[str, Any]) -> list[str]:
    """Every toxic on the Toxiproxy API and every app fault FaultAdmin lists, by name."""
    token = state.get("admin_token")
    left = [
        f"{name}: {toxic['name']}"
        for name, proxy in ToxiproxyClient(state["toxiproxy"], token=token).proxies().items()
        for toxic in proxy["toxics"]
    ]
    for service, addrs in state["services"].items():
        with admin_channel(addrs["admin"], token) as channel:
            listed = admin_pb2_grpc.FaultAdminStub(channel).ListFaults(
                admin_pb2.ListFaultsRequest(), timeout=5
            )
        left += [f"{service}: {f.method}" for f in listed.faults]
    return left


def policies(state: dict[str, Any]) -> set[str]:
    """The policy each service's PolicyAdmin says it runs."""
    names = set()
    for addrs in state["services"].values():
        with admin_channel(addrs["admin"], state.get("admin_token")) as channel:
            reply = admin_pb2_grpc.PolicyAdminStub(channel).GetPolicy(
                admin_pb2.GetPolicyRequest(), timeout=5
            )
        names.add(str(reply.name))
    return names


def ports(state: dict[str, Any]) -> set[int]:
    """Every loopback port mesh.json names (services, proxies, Toxiproxy, Redis, SMTP)."""
    return {int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", json.dumps(state))}


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def started(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*MESH, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )


def own_mesh(proc: subprocess.Popen[bytes], state_dir: Path) -> dict[str, Any]:
    """The run's own mesh as its mesh.json describes it, once written."""
    path = state_dir / "mesh.json"

    def written() -> bool:
        assert proc.poll() is None, proc.communicate()[0].decode()
        return path.exists()

    wait_until(written, 120, "the run's own mesh up", interval_s=0.1)
    return dict(json.loads(path.read_text()))


def stopped_by(proc: subprocess.Popen[bytes], sig: signal.Signals) -> tuple[int, str]:
    """Send `sig`; the exit code and output once the command has cleaned up and exited (or
    been killed after 90 s)."""
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    took_s = time.monotonic() - sent
    command = cast(list[str], proc.args)[3]
    print(f"\nmesh {command}: exit {proc.returncode} {took_s:.1f} s after {sig.name}")
    return proc.returncode, out.decode()


def left_of(state: dict[str, Any]) -> tuple[dict[str, int], set[int]]:
    """The mesh's processes still running (by PID; then killed, so no test leaves an orphan)
    and the ports it named that are still held."""
    alive = {name: pid for name, pid in state["pids"].items() if pid_alive(pid)}
    held = {port for port in ports(state) if not port_free(port)}
    for pid in alive.values():
        os.kill(pid, signal.SIGKILL)
    return alive, held


def test_sigterm_to_chaos_run_on_a_running_mesh_removes_faults_and_puts_the_policy_back(
    tmp_path: Path, mesh_up: MeshUp
) -> None:
    exp = tmp_path / "signal.yaml"
    exp.write_text(FAULTY)
    state = mesh_up.state
    assert policies(state) == {"full"} and faults_left(state) == []
    proc = started(
        ["chaos", "run", str(exp), "--target", "running", "--reports", str(tmp_path / "r")],
        {"MESH_STATE_DIR": str(mesh_up.state_dir)},
    )

    def in_force() -> bool:
        assert proc.poll() is None, proc.communicate()[0].decode()
        return len(faults_left(state)) >= 3 and policies(state) == {"retry-only"}

    try:
        wait_until(in_force, 120, "the faults and the variant's policy in force", 0.1)
    finally:
        code, out = stopped_by(proc, signal.SIGTERM)
    left, running = faults_left(state), policies(state)
    print(f"left: {len(left)} faults {left}, policies {running}")
    assert code == 143, out
    assert "interrupted by SIGTERM: every fault was removed, the target mesh is still" in out
    assert left == []
    assert running == {"full"}
    assert mesh_up.proc.poll() is None, "the target mesh is still running"
    assert serving(state["gateway"])


def test_sigterm_to_chaos_run_stops_its_own_mesh(tmp_path: Path) -> None:
    exp = tmp_path / "signal.yaml"
    exp.write_text(FAULTY)
    state_dir = tmp_path / "state"
    proc = started(
        ["chaos", "run", str(exp), "--state-dir", str(state_dir), "--reports", str(tmp_path)]
    )
    try:
        state = own_mesh(proc, state_dir)

        def faults_on() -> bool:
            assert proc.poll() is None, proc.communicate()[0].decode()
            return len(faults_left(state)) >= 3

        wait_until(faults_on, 120, "the faults on", 0.1)
    finally:
        code, out = stopped_by(proc, signal.SIGTERM)
    left = left_of(state)
    print(f"left: {len(left[0])} processes {sorted(left[0])}, {len(left[1])} ports held")
    assert code == 143, out
    assert "interrupted by SIGTERM: every fault was removed, the mesh stopped" in out
    assert left == ({}, set()), "processes left running, ports still held"


def under_load(proc: subprocess.Popen[bytes], state_dir: Path) -> bool:
    """The run is in its event loop, its load under way: an experiment's progress written
    (the demo) or a charge in the ledger (the soak)."""
    assert proc.poll() is None, proc.communicate()[0].decode()
    ledger = state_dir / "payment" / "ledger.sqlite3"
    if (state_dir / "experiment.json").exists():
        return True
    try:
        return ledger.exists() and bool(ledger_keys(ledger))
    except sqlite3.OperationalError:  # payment has not made its table yet
        return False


@pytest.mark.parametrize("command", ["demo", "soak"])
def test_sighup_to_demo_and_soak_stops_their_mesh(tmp_path: Path, command: str) -> None:
    state_dir = tmp_path / "state"
    args = {"demo": ["--reports", str(tmp_path / "r")], "soak": ["--duration", "120"]}[command]
    proc = started(
        [command, *args, "--state-dir", str(state_dir), "--json", str(tmp_path / "out.json")]
    )
    try:
        state = own_mesh(proc, state_dir)
        wait_until(lambda: under_load(proc, state_dir), 120, f"{command}'s load running", 0.1)
    finally:
        code, out = stopped_by(proc, signal.SIGHUP)
    left = left_of(state)
    print(f"left: {len(left[0])} processes {sorted(left[0])}, {len(left[1])} ports held")
    assert code == 129, out
    assert "interrupted by SIGHUP: every fault was removed, the mesh stopped" in out
    assert left == ({}, set()), "processes left running, ports still held"
