"""`mesh chaos run` as a user runs it: a short experiment, its JSON, its report, its exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
) -> tuple[subprocess.CompletedProcess[str], list]:
    exp = tmp_path / "short.yaml"
    exp.write_text(SHORT.replace("{max_calls}", str(max_calls)).replace("{more}", more))
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "chaos.cli",
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


def test_a_failed_hypothesis_exits_1(tmp_path: Path) -> None:
    proc, results = run(tmp_path, max_calls=1)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert results[0]["held"] is False
    assert "did not hold" in proc.stdout


def test_bad_experiment_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: x\nhypothesis: y\nvariants: [{name: full}]\nfautls: []\n")
    proc = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "chaos", "run", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "fautls" in proc.stdout and str(bad) in proc.stdout
