"""`mesh chaos run` as a user runs it: a short experiment, its JSON, its report, its exit code."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc
from tests.e2e.mesh_up_process import MESH, MeshUp
from tests.support.admin_channel import admin_channel
from tests.support.state_modes import current_umask, loose_modes

pytestmark = pytest.mark.e2e

SHORT = """
title: short outage of recommendations
hypothesis: the full policy answers every home request, degraded, and stops calling Recommend
dependency: recommendation
dependency_method: Recommend
steady_state:
  load: {rpc: [home], requests: 6, concurrency: 2}
faults:
  - {type: app_fault, service: recommendation, method: Recommend, error_rate: 1.0,
     code: UNAVAILABLE}
load: {rpc: [home], requests: 40, concurrency: 4, deadline_s: 3}
variants:
  - name: full
{more}
expectations:
  - {variant: full, metric: ok, min: 40}
  - {variant: full, metric: dependency_calls, max: {max_calls}}
"""


UNPROTECTED = "  - name: unprotected\n    policy: unprotected"


def run(
    tmp_path: Path, max_calls: int, more: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    exp = tmp_path / "short.yaml"
    exp.write_text(SHORT.replace("{max_calls}", str(max_calls)).replace("{more}", more))
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_resilience_mesh.cli",
            "chaos",
            "run",
            str(exp),
            "--json",
            str(out),
            "--reports",
            str(tmp_path / "reports"),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    return proc, json.loads(out.read_text()) if out.exists() else []


def test_a_short_experiment_end_to_end(tmp_path: Path) -> None:
    proc, results = run(tmp_path, max_calls=12, more=UNPROTECTED)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = results
    assert result["held"] is True
    by_name = {v["name"]: v for v in result["variants"]}
    full = by_name["full"]["phases"]["fault"]
    unprotected = by_name["unprotected"]["phases"]["fault"]
    assert full["metrics"]["requests"] == 40 == len(full["samples"])
    assert full["metrics"]["ok"] == 40
    assert full["metrics"]["degraded"] == 40, "every answer came from the fallback"
    # 5 consecutive failures open the per-method breaker; its retries are refused, not sent.
    assert 5 <= full["metrics"]["dependency_calls"] <= 12
    assert full["metrics"]["breaker_rejections"] > 0
    # Unprotected: one attempt per request, no breaker, every request reaches Recommend.
    assert unprotected["metrics"]["dependency_calls"] == 40
    assert unprotected["metrics"]["breaker_rejections"] == 0
    report = tmp_path / "reports" / "short" / "report.md"
    assert "hypothesis" in report.read_text().lower()
    assert (tmp_path / "reports" / "short" / "latency.png").stat().st_size > 1000
    # The run's state is the owner's alone (files 0600, folders 0700, as `mesh up`'s); its
    # reports are for sharing and keep the umask the user ran the command with.
    state_dir = tmp_path / "state"
    assert list(state_dir.rglob("*.log")) and list(state_dir.rglob("*.jsonl"))
    loose = loose_modes(state_dir)
    assert loose == [], "\n".join(loose)
    for shared in (report, tmp_path / "reports" / "index.html"):
        assert stat.S_IMODE(shared.stat().st_mode) == 0o666 & ~current_umask(), shared


def test_a_failed_hypothesis_exits_1(tmp_path: Path) -> None:
    proc, results = run(tmp_path, max_calls=1)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert results[0]["held"] is False
    assert "did not hold" in proc.stdout


def test_bad_experiment_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: x\nhypothesis: y\nvariants: [{name: full}]\nfautls: []\n")
    proc = subprocess.run(
        [sys.executable, "-m", "grpc_resilience_mesh.cli", "chaos", "run", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "fautls" in proc.stdout and str(bad) in proc.stdout


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    levels = ["x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "title: t\nhypothesis: h\n" + "\n".join(levels) + "\nvariants: [{name: full}]\n"
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "grpc_resilience_mesh.cli", "chaos", "run", str(bomb)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 20  # start-up and imports included; was 52 s of CPU
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stdout.strip().splitlines()
    assert line.startswith(f"error: {bomb}: line ")
    assert line.endswith("more than 20000 nodes once aliases are expanded")
    assert "Traceback" not in proc.stderr


def gateway_policy(mesh_up: MeshUp) -> str:
    addr = mesh_up.state["services"]["gateway"]["admin"]
    with admin_channel(addr, mesh_up.state["admin_token"]) as channel:
        reply = admin_pb2_grpc.PolicyAdminStub(channel).GetPolicy(
            admin_pb2.GetPolicyRequest(), timeout=5
        )
    return str(reply.name)


def test_target_running_drives_the_mesh_up_describes(tmp_path: Path, mesh_up: MeshUp) -> None:
    exp = tmp_path / "short.yaml"
    exp.write_text(
        SHORT.replace("{max_calls}", "12")
        .replace("{more}", UNPROTECTED)
        .replace("requests: 40", "requests: 20")
        .replace("min: 40", "min: 20")
    )
    out = tmp_path / "out.json"
    assert gateway_policy(mesh_up) == "full"
    proc = subprocess.run(
        [
            *MESH,
            "chaos",
            "run",
            str(exp),
            "--target",
            "running",
            "--json",
            str(out),
            "--reports",
            str(tmp_path / "reports"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "MESH_STATE_DIR": str(mesh_up.state_dir)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [result] = json.loads(out.read_text())
    by_name = {v["name"]: v for v in result["variants"]}
    assert [v["skipped"] for v in by_name.values()] == ["", ""], "every variant ran"
    assert by_name["unprotected"]["phases"]["fault"]["metrics"]["dependency_calls"] == 20
    assert by_name["full"]["phases"]["fault"]["metrics"]["dependency_calls"] <= 12
    assert gateway_policy(mesh_up) == "full", "the mesh is back on the policy it ran"
