"""The built-in mesh run as a topology (grpc_resilience_mesh/chaos/topologies/mesh.yaml): its
experiment under `mesh chaos run` as a user runs it, the four services started by the runner
behind a proxy per edge, as any user's services are; against the embedded Toxiproxy, as the
file says, and against the real one (a copy of the files pointed at it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import grpc_resilience_mesh.chaos
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.launch.polling import poll_until
from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy, binary_path

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TOPOLOGIES = Path(grpc_resilience_mesh.chaos.__file__).parent / "topologies"
EXPERIMENT = Path("experiments") / "slow-profile.yaml"
MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]
EDGES = [
    "client_to_gateway",
    "gateway_to_payment",
    "gateway_to_profile",
    "gateway_to_recommendation",
    "recommendation_to_profile",
]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def run(topologies: Path, tmp_path: Path) -> dict[str, Any]:
    """`mesh chaos run` on the experiment, from a folder of its own; its result.json."""
    env = {**os.environ, "MESH_CHAOS_LEVER": str(tmp_path / "lever")}  # no other test's lever
    reports = tmp_path / "reports"
    command = [*MESH, "chaos", "run", str(topologies / EXPERIMENT), "--reports", str(reports)]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    said = done.stdout + done.stderr
    found = list(reports.glob("*/result.json"))
    assert len(found) == 1, said
    result: dict[str, Any] = json.loads(found[0].read_text())
    assert (done.returncode, result["verdict"]) == (0, "held"), said
    return result


def check(result: dict[str, Any], run_dir: Path) -> None:
    assert [e["metric"] for e in result["expectations"] if not e["held"]] == [], result
    assert result["load"]["code.OK"] == 200
    assert result["toxics_after_rollback"] == {edge: [] for edge in EDGES}
    assert sorted(result["pids"]) == ["gateway", "payment", "profile", "recommendation"]
    assert poll_until(lambda: not any(alive(p) for p in result["pids"].values()), 5.0)
    lines = (run_dir / "traces" / "gateway.jsonl").read_text().splitlines()
    homes = [s for s in map(json.loads, lines) if s["name"].endswith("Gateway.GetHome")]
    assert len(homes) == 50 + 200, "steady state and load, each home one server span"
    assert {s["attributes"].get("mesh.chaos.run_id") for s in homes} == {result["run_id"]}
    assert (run_dir / "payment" / "ledger.sqlite3").is_file()


def test_a_slow_profile_is_waited_for_with_the_embedded_toxiproxy(tmp_path: Path) -> None:
    shipped = sorted(p.name for p in TOPOLOGIES.rglob("*"))
    result = run(TOPOLOGIES, tmp_path)
    check(result, tmp_path / "reports" / result["run_id"])
    assert sorted(p.name for p in TOPOLOGIES.rglob("*")) == shipped, "nothing written beside it"


def test_a_slow_profile_is_waited_for_with_the_real_toxiproxy(tmp_path: Path) -> None:
    if not os.access(binary_path(), os.X_OK):
        pytest.skip(f"no real Toxiproxy at {binary_path()}: `make peers` builds it")
    copy = tmp_path / "topologies"
    shutil.copytree(TOPOLOGIES, copy)
    with RealToxiproxy(log_path=tmp_path / "toxiproxy.log") as real:
        text = (copy / "mesh.yaml").read_text()
        pointed = text.replace("\ntoxiproxy: embedded\n", f"\ntoxiproxy: {real.base_url}\n")
        assert pointed != text
        (copy / "mesh.yaml").write_text(pointed)
        result = run(copy, tmp_path)
        left = ToxiproxyClient(real.base_url).proxies()
    check(result, tmp_path / "reports" / result["run_id"])
    assert left == {}
