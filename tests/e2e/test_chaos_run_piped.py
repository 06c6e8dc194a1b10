"""`mesh chaos run` piped (tee, a CI log): rich's live progress draws nothing off a terminal, so
the run prints a plain line at least every 10 s, through a load that is silent for 12 s."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

QUIET_GAP_S = 10.0
"""The longest a reader of the piped output may wait for a line (issue 46)."""

# Every call of the load is held by profile until its 1 s deadline: 24 calls, 2 at a time,
# are 12 s of load with no table in between.
HELD = """
title: held calls, long enough to be silent between two tables
hypothesis: every home request ends on its deadline
dependency: profile
dependency_method: GetProfile
steady_state:
  load: {rpc: [home], requests: 6, concurrency: 2}
faults:
  - {type: app_fault, service: profile, method: GetProfile, error_rate: 0.0, delay_s: 30}
load: {rpc: [home], requests: 24, concurrency: 2, deadline_s: 1.0}
variants:
  - name: full
expectations:
  - {variant: full, metric: requests, min: 24}
"""


def test_a_piped_run_prints_a_line_at_least_every_10_s(tmp_path: Path) -> None:
    exp = tmp_path / "held.yaml"
    exp.write_text(HELD)
    argv = [sys.executable, "-m", "grpc_resilience_mesh.cli", "chaos", "run", str(exp)]
    argv += ["--reports", str(tmp_path / "reports"), "--state-dir", str(tmp_path / "state")]
    started = time.monotonic()
    arrivals: list[tuple[float, str]] = []
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:  # each line as the pipe delivers it
            arrivals.append((time.monotonic(), line.rstrip()))
        code = proc.wait(timeout=120)
    text = "\n".join(line for _, line in arrivals)
    assert code in (0, 1), text
    assert "hypotheses held" in text, text
    stamps = [started] + [at for at, _ in arrivals]
    gaps = [(b - a, line) for a, (b, line) in zip(stamps, arrivals, strict=False)]
    longest, before = max(gaps)
    assert longest <= QUIET_GAP_S, f"{longest:.1f} s of silence before {before!r}\n{text}"
    assert any("left" in line and "1/1" in line for _, line in arrivals), text
