"""The metastability lab end to end: the four-panel's tipping panel (its demo form) through
`mesh chaos run` on the embedded mesh, its four-panel figure, and the model's prediction set
beside the measured run by `python -m grpc_resilience_mesh.chaos.metastable panels`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grpc_resilience_mesh.chaos.experiment.loading import resolve

pytestmark = pytest.mark.e2e


def _tipping_only(tmp_path: Path) -> Path:
    data = yaml.safe_load(resolve("metastable-four-panel").read_text())
    data["variants"] = [v for v in data["variants"] if v["name"] == "tipping"]
    data["expectations"] = [e for e in data["expectations"] if e["variant"] == "tipping"]
    data["reference"] = [r for r in data["reference"] if r["variant"] == "tipping"]
    path = tmp_path / "metastable-four-panel.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_tipping_panel_tips_on_the_mesh_as_the_model_predicts(tmp_path: Path) -> None:
    out, reports = tmp_path / "out.json", tmp_path / "reports"
    run = subprocess.run(
        [
            *(sys.executable, "-m", "grpc_resilience_mesh.cli", "chaos", "run"),
            *(str(_tipping_only(tmp_path)), "--json", str(out), "--reports", str(reports)),
            *("--state-dir", str(tmp_path / "state")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    [result] = json.loads(out.read_text())
    metrics = result["variants"][0]["phases"]["fault"]["metrics"]
    assert metrics["low_after_trigger_s"] >= 10 and metrics["abandoned_work"] > 0
    assert (reports / "metastable-four-panel" / "four-panel.png").stat().st_size > 1000
    table = subprocess.run(
        [
            *(sys.executable, "-m", "grpc_resilience_mesh.chaos.metastable", "panels"),
            *("--seeds", "3", "--result", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    row = next(line for line in table.splitlines() if line.startswith("| tipping |"))
    assert row.startswith("| tipping | tipped | tipped (0/3 recovered) |")
    assert "| tipped |" in row.split("recovered) |", 1)[1]
