"""`mesh soak --duration 60` as a user runs it: steady load, scheduled chaos, bounded growth."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.timeout(180)
def test_one_minute_soak_meets_its_targets(tmp_path: Path) -> None:
    report = tmp_path / "soak.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_resilience_mesh.cli",
            "soak",
            "--duration",
            "60",
            "--seed",
            "7",
            "--json",
            str(report),
            "--state-dir",
            str(tmp_path / "var"),
        ],
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert report.exists(), proc.stdout + proc.stderr
    result = json.loads(report.read_text())
    summary = "\n".join(
        f"{g['service']} {g['metric']}: {g['first']:.0f} -> {g['last']:.0f} ({g['growth']:+.1%})"
        for g in result["growth"]
    )
    print(
        f"\n{summary}\nacknowledged {result['acknowledged_charges']}, "
        f"lost {result['lost_charges']}, faults {len(result['faults'])}"
    )
    assert result["lost_charges"] == 0
    assert result["acknowledged_charges"] > 500
    assert sum(1 for f in result["faults"] if f["on"]) >= 2, "chaos must have been on"
    assert {g["service"] for g in result["growth"]} >= {
        "gateway",
        "profile",
        "recommendation",
        "payment",
    }
    assert all(g["passed"] for g in result["growth"] if g["judged"]), summary
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert not list((tmp_path / "var").glob("mesh.json"))  # the mesh was stopped
