"""`mesh chaos grid`: an overload grid (grpc_resilience_mesh/chaos/experiment/grid.py) run as
one experiment per backend cell in one session, then its heat maps and claim written to
REPORTS/grid.md (grpc_resilience_mesh/chaos/report/grid_table.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from grpc_resilience_mesh.chaos.experiment.grid import Cell, plan, planned_s
from grpc_resilience_mesh.chaos.experiment.grid_files import load_grid, write_cells
from grpc_resilience_mesh.chaos.report.grid_plot import grid_figure
from grpc_resilience_mesh.chaos.report.grid_table import CellRun, grid_report
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.cli.chaos_cmd import console, refuse
from grpc_resilience_mesh.cli.json_out import JsonOpt


def _cell_runs(
    written: list[tuple[Cell, list[float], Path]], results: list[ExperimentResult]
) -> list[CellRun]:
    by_path = {r.path.resolve(): r for r in results}
    runs = []
    for cell, points, path in written:
        result = by_path.get(path.resolve())
        metrics = {}
        for v in result.variants if result else []:
            if "fault" in v.phases:
                metrics[v.variant.name] = v.phases["fault"].metrics
        runs.append(CellRun(cell, points, metrics))
    return runs


def grid_command(
    grid_file: Annotated[str, typer.Argument(help="A grid name in chaos/grids or a path.")],
    quick: Annotated[bool, typer.Option("--quick", help="The grid's quick cells only.")] = False,
    reports: Annotated[Path, typer.Option(help="Folder for grid.md and the cells.")] = Path(
        "reports"
    ),
    state_dir: Annotated[Path, typer.Option(help="State of the embedded mesh.")] = Path(
        "var/chaos"
    ),
    json_path: JsonOpt = None,
) -> None:
    """Run an overload grid; exit 1 when the claim misses at a point, 2 on bad input."""
    from grpc_resilience_mesh.cli.chaos_run import execute

    try:
        grid, base = load_grid(grid_file)
        written, left = write_cells(grid, base, quick, reports / "grid-cells")
    except ValueError as err:  # safe_yaml.YamlError among them
        refuse(err)
    lines = [str(v["name"]) for v in base["variants"]]
    loads = (grid.quick if quick else grid).offered_x
    runs_plan = [(cell, points) for cell, points, _ in written]
    console.print(
        f"grid: {len(written)} cells, {len(left)} points left out; at least "
        f"{planned_s(runs_plan, len(lines))} s of load"
    )
    results = execute([str(p) for _, _, p in written], None, json_path, reports, state_dir)
    measured = results[0].capacity.get("capacity_per_s") if results else None
    ceiling = (
        f"{grid.gateway_ceiling_per_s:g} homes/s planned with (share {grid.ceiling_share:g}); "
        f"this run's probe {measured or 0:.0f} homes/s"
    )
    _, over = plan(grid, quick, measured)
    cell_runs = _cell_runs(written, results)
    report = grid_report(cell_runs, lines, loads, grid.claim, left, ceiling)
    skipped = {(o.cell, o.offered_x) for o in left}
    ran_over = [o for o in over if (o.cell, o.offered_x) not in skipped] if measured else []
    if ran_over:
        report += "\nOver the share of this run's probe (ran, read with care):\n"
        report += "".join(f"- {o.cell.name} at {o.offered_x:g}x\n" for o in ran_over)
    grid_figure(cell_runs, lines, loads).savefig(reports / "grid.png", dpi=110)
    report += "\n![goodput per line](grid.png)\n"
    (reports / "grid.md").write_text(report)
    console.print(report, markup=False, highlight=False)
    console.print(f"wrote {reports / 'grid.md'}")
    if "- MISS " in report:
        raise typer.Exit(1)
