"""A sweep's table: a row per load point, the columns the file names, and with `--repeat`
each cell's median [min-max] across the runs (the curve's numbers, as sweep.png draws them)."""

from __future__ import annotations

from rich.console import RenderableType

from grpc_resilience_mesh.chaos.report.repeat import metric_values, spread_text
from grpc_resilience_mesh.chaos.report.table_fit import Column, FitTable
from grpc_resilience_mesh.chaos.results import ExperimentResult


def _cell(result: ExperimentResult, variant: str, metrics: dict[str, float], key: str) -> str:
    if len(result.repeats) > 1:
        found = metric_values(result.repeats, variant, "fault", key)
        return spread_text(found) if found else "-"
    value = metrics.get(key)
    return "-" if value is None else f"{value:.4g}"


def sweep_table(
    result: ExperimentResult, width: int = 120, explained: set[str] | None = None
) -> RenderableType:
    exp = result.experiment
    keys = [k for k in exp.columns if k != "offered_x_capacity"]
    table = FitTable(
        [Column("point", justify="left", keep=True), *[Column(k) for k in keys]],
        priority=list(range(len(keys) + 1)),
        title=f"{result.name}: {exp.title}",
        caption=f"hypothesis: {exp.hypothesis}",
        notes=[
            f"{v.variant.name}: {v.skipped or v.error}"
            for v in result.variants
            if v.skipped or v.error
        ],
        explained=explained,
    )
    for v in result.variants:
        metrics = v.phases["fault"].metrics if "fault" in v.phases else {}
        table.add_row(v.variant.name, *[_cell(result, v.variant.name, metrics, k) for k in keys])
    return table.render(width)
