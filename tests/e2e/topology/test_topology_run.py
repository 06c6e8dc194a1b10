"""`mesh chaos run` on a topology of the user's own: the kv example's server, started by the
runner behind the embedded Toxiproxy, driven through the CLI as a user drives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy, binary_path

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]

TOPOLOGY = """
kind: topology
name: kv
toxiproxy: {toxiproxy}
services:
  kv:
    command: {command}
    cwd: {root}
    ready_timeout_s: {ready}
edges:
  - {{from: client, to: kv}}
"""

EXPERIMENT = """
title: kv under a fault
topology: topology.yaml
load:
  method: {method}
  request: {request}
  deadline_s: {deadline}
  requests: {requests}
  max_duration_s: 30
  concurrency: 4
  descriptor_set: {root}/examples/kv/kv.binpb
steady_state: {{requests: 20, max_error_rate: 0.0}}
faults:
  - {fault}
expectations:
  - {{metric: error_rate, max: 0.0}}
  - {{metric: p50_s, min: 0.09}}
"""

LATENCY = "{edge: client_to_kv, toxic: latency, attributes: {latency: 100}}"
RESET = "{edge: client_to_kv, toxic: reset_peer, attributes: {timeout: 0}, stream: upstream}"


class Case:
    """One topology and experiment in a temporary folder, and a marker in the service's argv
    to find any process of it left behind."""

    def __init__(self, tmp_path: Path, **fields: Any) -> None:
        self.dir = tmp_path
        self.marker = f"h43-{uuid.uuid4().hex}"
        command = fields.pop("command", ["python", "-m", "examples.kv.server"])
        values = {
            "root": ROOT,
            "ready": 15,
            "method": "/kvexample.v1.KeyValue/Put",
            "request": '{key: "k-{n}", value: "v"}',
            "deadline": 2.0,
            "requests": 60,
            "fault": LATENCY,
            "toxiproxy": "embedded",
            **fields,
        }
        values["command"] = json.dumps([*command, self.marker])
        (tmp_path / "topology.yaml").write_text(TOPOLOGY.format(**values))
        (tmp_path / "exp.yaml").write_text(EXPERIMENT.format(**values))
        self.lever = tmp_path / "lever"

    def mesh(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "MESH_CHAOS_LEVER": str(self.lever), "COLUMNS": "200"}
        return subprocess.run(
            [*MESH, *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=90
        )

    def run(self, *flags: str) -> subprocess.CompletedProcess[str]:
        return self.mesh(
            "chaos",
            "run",
            *flags,
            str(self.dir / "exp.yaml"),
            "--reports",
            str(self.dir / "reports"),
        )

    def result(self) -> dict[str, Any]:
        (found,) = (self.dir / "reports").glob("*/result.json")
        return dict(json.loads(found.read_text()))

    def left_running(self) -> list[int]:
        """PIDs whose command line carries this case's marker."""
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and self.marker in (entry / "cmdline").read_text():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids


def test_a_fault_that_the_service_absorbs_holds_and_is_rolled_back(tmp_path: Path) -> None:
    case = Case(tmp_path)
    done = case.run()
    result = case.result()
    assert done.returncode == 0, (done.stdout, result)
    assert result["verdict"] == "held", result
    assert result["steady_state"]["p50_s"] < 0.09 <= result["load"]["p50_s"], result
    assert result["load"]["code.OK"] == 60
    assert result["toxics_after_rollback"] == {"client_to_kv": []}
    assert (tmp_path / "reports" / result["run_id"] / "report.md").is_file()
    assert case.left_running() == []


def test_the_guard_aborts_a_run_and_removes_the_fault_within_2_s(tmp_path: Path) -> None:
    case = Case(tmp_path, fault=RESET, requests=20_000, deadline=0.5)
    done = case.run()
    assert done.returncode == 3, done.stdout + done.stderr
    result = case.result()
    assert result["verdict"].startswith("aborted by guard: error_rate")
    assert result["breach"]["metric"] == "error_rate" and result["breach"]["value"] > 0.5
    assert result["rollback_s"] < 2.0
    assert result["toxics_after_rollback"] == {"client_to_kv": []}
    assert result["load"]["requests"] < 20_000
    assert "aborted by guard" in done.stdout
    assert case.left_running() == []


def test_against_the_real_toxiproxy_the_guard_aborts_and_the_proxies_go(tmp_path: Path) -> None:
    if not os.access(binary_path(), os.X_OK):
        pytest.skip(f"no real Toxiproxy at {binary_path()} (`make peers`)")
    with RealToxiproxy(log_path=tmp_path / "toxiproxy.log") as real:
        case = Case(tmp_path, fault=RESET, requests=20_000, deadline=0.5, toxiproxy=real.base_url)
        done = case.run()
        left = ToxiproxyClient(real.base_url).proxies()
    assert done.returncode == 3, done.stdout + done.stderr
    result = case.result()
    assert result["verdict"].startswith("aborted by guard: error_rate")
    assert result["rollback_s"] < 2.0
    assert result["toxics_after_rollback"] == {"client_to_kv": []}
    assert left == {} and case.left_running() == []


def test_the_lever_stops_a_running_experiment_within_2_s(tmp_path: Path) -> None:
    case = Case(tmp_path, requests=20_000)
    env = {**os.environ, "MESH_CHAOS_LEVER": str(case.lever), "COLUMNS": "200"}
    args = [*MESH, "chaos", "run", str(tmp_path / "exp.yaml"), "--reports", str(tmp_path / "r")]
    with subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as run:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("faults in"):
                break
        assert case.mesh("chaos", "stop", "--reason", "drill").returncode == 0
        pulled_at = time.monotonic()
        for line in run.stdout:
            if line.startswith("faults removed"):
                break
        removed_s = time.monotonic() - pulled_at
        out, _ = run.communicate(timeout=30)
    (found,) = (tmp_path / "r").glob("*/result.json")
    result = json.loads(found.read_text())
    assert run.returncode == 4, out
    assert result["verdict"] == "stopped by lever: drill"
    assert result["rollback_s"] < 2.0 and removed_s < 2.0, (result["rollback_s"], removed_s)
    assert result["toxics_after_rollback"] == {"client_to_kv": []}
    assert 0 < result["load"]["requests"] < 20_000
    assert case.left_running() == []


def test_a_dry_run_checks_everything_and_injects_nothing(tmp_path: Path) -> None:
    case = Case(tmp_path)
    done = case.run("--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    result = case.result()
    assert result["verdict"] == "dry run: ready" and "load" not in result
    assert result["steady_state"]["code.OK"] == 20
    assert result["toxics"] == {"client_to_kv": []}
    assert case.left_running() == []


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"method": "/kvexample.v1.KeyValue/Gett"}, "Gett"),
        ({"request": "{kee: k}"}, "kee"),
        (
            {"command": [sys.executable, "-c", "import time; time.sleep(60)"], "ready": 1},
            "ready_timeout_s: 1",
        ),
    ],
    ids=["unknown method", "request not matching", "never ready"],
)
def test_bad_input_is_refused_and_leaves_nothing(
    tmp_path: Path, fields: dict[str, Any], said: str
) -> None:
    case = Case(tmp_path, **fields)
    done = case.run()
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stdout and "faults in" not in done.stdout, done.stdout
    assert not (tmp_path / "reports").exists() or not list((tmp_path / "reports").glob("*/*.json"))
    assert case.left_running() == []


def test_an_edge_to_an_undeclared_service_starts_nothing(tmp_path: Path) -> None:
    case = Case(tmp_path)
    topology = (tmp_path / "topology.yaml").read_text()
    (tmp_path / "topology.yaml").write_text(topology.replace("to: kv}", "to: kvv}"))
    done = case.run()
    assert done.returncode == 2
    assert "edges.0.to: undeclared service 'kvv'; did you mean 'kv'?" in done.stdout
    assert not (tmp_path / "reports").exists() and case.left_running() == []


def test_a_pulled_lever_refuses_the_run(tmp_path: Path) -> None:
    case = Case(tmp_path)
    assert case.mesh("chaos", "stop", "--reason", "maintenance").returncode == 0
    done = case.run()
    assert done.returncode == 2 and "maintenance" in done.stdout, done.stdout
    assert "mesh chaos stop --release" in done.stdout
    assert not (tmp_path / "reports").exists() and case.left_running() == []
