"""The overload grid (issue 45 item 2): its cells become valid sweep experiments with their
deadlines scaled, points over the mesh's ceiling are left out and listed, and the report
checks the claim at every point, naming each miss with a mechanism."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.grid import Cell, Claim, Grid, plan, with_claim
from grpc_resilience_mesh.chaos.experiment.grid_files import load_grid, write_cells
from grpc_resilience_mesh.chaos.experiment.loading import load_experiment, problems
from grpc_resilience_mesh.chaos.report.grid_plot import goodput_grid
from grpc_resilience_mesh.chaos.report.grid_table import CellRun, grid_report, misses


def test_the_catalogues_grid_loads_and_its_quick_form_is_the_issues_numbers() -> None:
    grid, base = load_grid("overload-grid")
    runs, left = plan(grid, quick=True)
    assert [(c.workers, c.service_time_s, c.deadline_x, points) for c, points in runs] == [
        (4, 0.25, 4.0, [3.0, 8.0])
    ]
    assert left == []
    assert set(grid.claim.lines) < {v["name"] for v in base["variants"]}


def test_the_full_grids_cells_are_valid_experiments(tmp_path: Path) -> None:
    grid, base = load_grid("overload-grid")
    written, left = write_cells(grid, base, False, tmp_path)
    assert len(written) + len({o.cell for o in left} - {c for c, _, _ in written}) == 18
    for cell, points, path in (written[0], written[-1]):  # the smallest and the largest
        _, exp = load_experiment(str(path))
        assert problems(path, exp) == []
        assert exp.sweep is not None and exp.sweep.workers == cell.workers
        assert [v.name for v in exp.variants][: len(points)] == [f"none.{x:g}x" for x in points]
        assert {e.variant for e in exp.expectations} == {
            f"{line}.{x:g}x" for line in grid.claim.lines for x in points
        }


def test_points_over_the_ceiling_share_are_left_out_and_listed() -> None:
    grid, _ = load_grid("overload-grid")
    runs, left = plan(grid, quick=False, ceiling_per_s=200.0)  # 100 homes/s at share 0.5
    for cell, points in runs:
        assert all(x * cell.capacity_per_s <= 100.0 for x in points)
    assert all(o.rate_per_s > 100.0 for o in left)
    assert any(o.cell == Cell(20, 0.05, 2.0) for o in left)


def test_a_grid_outside_the_issues_ranges_is_refused() -> None:
    with pytest.raises(ValueError, match=r"grid.workers: 21 is not in \[1, 20\]"):
        Grid.model_validate(
            {
                "workers": [21],
                "service_time_s": [0.25],
                "offered_x": [3],
                "deadline_x_service": [4],
                "gateway_ceiling_per_s": 500,
                "claim": {"lines": ["gradient2"]},
                "quick": {
                    "workers": [4],
                    "service_time_s": [0.25],
                    "offered_x": [3],
                    "deadline_x_service": [4],
                },
            }
        )


def test_the_report_names_each_miss_with_the_mechanism_its_figures_point_to() -> None:
    cell = Cell(1, 1.0, 2.0)
    runs = [
        CellRun(
            cell,
            [3.0, 8.0],
            {
                "gradient2.3x": {"goodput_vs_declared": 0.95, "accepted_p99_ms": 1500.0},
                "gradient2.8x": {"goodput_vs_declared": 0.4, "accepted_p99_ms": 1900.0},
            },
        )
    ]
    claim = Claim(lines=["gradient2"])
    found = misses(runs, claim)
    assert [(m.line, m.offered_x) for m in found] == [("gradient2", 8.0)]
    assert found[0].mechanism.startswith("queueing to the deadline")
    report = grid_report(runs, ["gradient2"], [3.0, 8.0], claim, [], "574 homes/s")
    assert "| 1 x 1000 ms, d 2 | 0.95 / 1500 | 0.40 / 1900 |" in report
    assert "1 of 2 points held; 1 collapsed." in report
    assert "- MISS gradient2 at 8x on 1 x 1000 ms, d 2: goodput 0.40 (COLLAPSE);" in report


def test_an_accepted_p99_past_the_calls_deadline_misses_the_claim_whatever_the_goodput() -> None:
    """0.5 s attempts, 1 s calls: a home served on its retry may take 0.9 s, not 1.02 s."""
    cell = Cell(4, 0.25, 2.0)
    late = {"goodput_vs_declared": 0.95, "accepted_p99_ms": 1020.0}
    fine = {"goodput_vs_declared": 0.95, "accepted_p99_ms": 900.0}
    assert misses([CellRun(cell, [3.0], {"vegas.3x": fine})], Claim(lines=["vegas"])) == []
    found = misses([CellRun(cell, [3.0], {"vegas.3x": late})], Claim(lines=["vegas"]))
    assert [(m.goodput, m.collapsed, m.late_ms) for m in found] == [(0.95, False, 1020.0)]
    exp = with_claim({}, Claim(lines=["vegas"]), [3.0], cell)
    bounds = {(e["metric"], e.get("min"), e.get("max")) for e in exp["expectations"]}
    assert bounds == {("goodput_vs_declared", 0.9, None), ("accepted_p99_ms", None, 1000.0)}


def test_the_heat_map_leaves_a_point_not_measured_blank() -> None:
    runs = [CellRun(Cell(4, 0.25, 4.0), [3.0], {"vegas.3x": {"goodput_vs_declared": 0.97}})]
    rows = goodput_grid(runs, "vegas", [3.0, 8.0])
    assert rows[0][0] == 0.97 and math.isnan(rows[0][1])
