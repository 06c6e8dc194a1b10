"""`mesh chaos grid --quick` on the embedded mesh: the quick cells run as sweep experiments,
grid.md carries each line's heat map, the claim's count and the points left out for the
mesh's ceiling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

GRID = """
grid:
  workers: [1]
  service_time_s: [0.1]
  offered_x: [1.5, 10]
  deadline_x_service: [4]
  gateway_ceiling_per_s: 100
  claim: {lines: [gradient2]}
  quick: {workers: [1], service_time_s: [0.1], offered_x: [1.5, 10], deadline_x_service: [4]}
experiment:
  title: a one-cell grid
  hypothesis: Gradient2 fitted to one worker keeps its goodput
  dependency: recommendation
  dependency_method: Recommend
  load: {rpc: [home]}
  variants:
    - name: none
      overrides:
        servers: {gateway: {max_in_flight: 0}, recommendation: {max_in_flight: 0}}
    - name: gradient2
      overrides:
        servers: {gateway: {max_in_flight: 0},
                  recommendation: {max_in_flight: 0,
                                   limit: {algorithm: gradient2, window: {enabled: true}}}}
        edges:
          gateway_to_recommendation:
            breaker: {enabled: false}
            outlier: {enabled: false}
            throttle: {enabled: false}
"""


def test_a_quick_grid_reports_heat_maps_the_claim_and_the_points_left_out(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    reports = tmp_path / "reports"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "grpc_resilience_mesh.cli", "chaos", "grid", str(grid)),
            *("--quick", "--reports", str(reports), "--state-dir", str(tmp_path / "state")),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    report = (reports / "grid.md").read_text()
    assert "## none: goodput (of capacity) / accepted p99 ms" in report
    assert "| 1 x 100 ms, d 4 |" in report
    assert "of 1 points held; " in report and " collapsed." in report
    # 10x of 2 x 1 / 0.1 s = 200 homes/s, above half the declared 100: not run, listed
    assert "- 1 x 100 ms, d 4 at 10x: 200 homes/s" in report
    assert (proc.returncode == 0) == ("- MISS " not in report)
    assert (reports / "grid.png").stat().st_size > 0
