"""An overload grid's figure, `grid.png`: one heat map per line, backends down, offered load
across, each cell coloured by goodput (of the declared capacity) and labelled with it; a point
left out or not measured stays blank."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.experiment.sweep import point_name
from grpc_resilience_mesh.chaos.report.grid_table import CellRun


def goodput_grid(runs: list[CellRun], line: str, loads: list[float]) -> list[list[float]]:
    """Rows of goodput per load for one line (NaN: left out or nothing measured)."""
    rows = []
    for run in runs:
        row = []
        for x in loads:
            m = run.metrics.get(point_name(line, x), {})
            row.append(m.get("goodput_vs_declared", math.nan))
        rows.append(row)
    return rows


def grid_figure(runs: list[CellRun], lines: list[str], loads: list[float]) -> Figure:
    height = 1.5 + 0.3 * len(runs)
    fig = Figure(figsize=(3.2 * len(lines), height), layout="constrained")
    axes = fig.subplots(1, len(lines), sharey=True, squeeze=False)[0]
    labels = [
        f"{r.cell.workers} x {r.cell.service_time_s * 1000:g} ms, d {r.cell.deadline_x:g}"
        for r in runs
    ]
    for ax, line in zip(axes, lines, strict=True):
        rows = goodput_grid(runs, line, loads)
        image = ax.imshow(rows, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                if not math.isnan(value):
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7)
        ax.set_title(line, fontsize=9)
        ax.set_xticks(range(len(loads)), [f"{x:g}x" for x in loads])
        ax.set_yticks(range(len(runs)), labels, fontsize=7)
    fig.colorbar(image, ax=list(axes), label="goodput / declared capacity")
    fig.suptitle("overload grid: backend (workers/replica x service, attempt d) x offered load")
    return fig
