"""The `mesh chaos run FILE` route docs/architecture.md lists is the set of product files such a
run crosses in the CLI's process: a whole run of a small experiment on the embedded mesh, the
command traced from start to exit (tests.support.traced_cli)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_routes import ROOT, chaos_run_route, differences

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

EXPERIMENT = """
title: short outage of recommendations
hypothesis: the full policy answers every home request, degraded
dependency: recommendation
dependency_method: Recommend
steady_state:
  load: {rpc: [home], requests: 4, concurrency: 2}
faults:
  - {type: app_fault, service: recommendation, method: Recommend, error_rate: 1.0,
     code: UNAVAILABLE}
load: {rpc: [home], requests: 10, concurrency: 2, deadline_s: 3}
variants:
  - name: full
expectations:
  - {variant: full, metric: ok, min: 10}
"""
"""One variant, 4 steady-state and 10 faulted home requests: the cheapest whole run."""

SETUP = {"MESH_LOADGEN": "python", "MESH_TOXIPROXY": "embedded"}
"""What a plain `pip install` runs: no Go load generator, the embedded Toxiproxy."""


def test_the_page_lists_exactly_the_files_a_chaos_run_crosses(tmp_path: Path) -> None:
    experiment = tmp_path / "short.yaml"
    experiment.write_text(EXPERIMENT)
    out = tmp_path / "crossed.json"
    command = ["chaos", "run", str(experiment), f"--reports={tmp_path / 'reports'}"]
    command += [f"--json={tmp_path / 'result.json'}", f"--state-dir={tmp_path / 'var'}"]
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.traced_cli", str(out), *command],
        capture_output=True,
        text=True,
        timeout=200,
        cwd=ROOT,
        env={**os.environ, **SETUP},
    )
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    crossed = json.loads(out.read_text())
    assert crossed["exit_code"] == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "reports" / "short" / "report.md").exists()  # the run went to its end
    measured: list[str] = crossed["files"]
    print(f"`mesh chaos run FILE`: {len(measured)} product files crossed in the CLI's process")
    problem = differences("`mesh chaos run FILE`", chaos_run_route().files, measured)
    assert not problem, problem
