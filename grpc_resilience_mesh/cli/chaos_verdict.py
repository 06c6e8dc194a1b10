"""The verdict at the end of `mesh chaos run`: what missed and why first, in the lesson's order,
then the table of every experiment and what it showed (a miss there without its why, said
once above)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from grpc_resilience_mesh.chaos.experiment.lesson_order import lesson_rank
from grpc_resilience_mesh.chaos.report.missed import Miss, missed_line, misses
from grpc_resilience_mesh.chaos.report.table_fit import Column, FitTable
from grpc_resilience_mesh.chaos.report.tables import showed
from grpc_resilience_mesh.chaos.results import ExperimentResult


def verdict_screen(results: list[ExperimentResult], width: int = 120) -> RenderableType:
    """The missed block (nothing when every hypothesis held), then the verdict table."""
    return Group(*missed_block(results), verdict_table(results).render(width))


def missed_block(results: list[ExperimentResult]) -> list[RenderableType]:
    """Per experiment that did not hold: each miss, as `variant/phase metric = measured (want
    bound)` and under it why the bound is what it is."""
    missed = sorted((r for r in results if not r.held), key=lambda r: lesson_rank(r.name))
    if not missed:
        return []
    block: list[RenderableType] = [
        Text(f"missed: {len(missed)} of {len(results)} hypotheses did not hold", style="bold red")
    ]
    for r in missed:
        block.append(Text(r.name, style="bold"))
        for m in misses(r) or [Miss("", "did not hold in every run")]:
            block += _miss(m)
    block.append(Text(""))
    return block


def _miss(m: Miss) -> list[RenderableType]:
    if not m.metric:
        return [Padding(Text(m.line(), style="red"), (0, 0, 0, 2))]
    void = f" VOID: {m.void}" if m.void else ""
    measured = f"{m.variant}/{m.phase} {m.metric} = {m.measured} (want {m.bound}){void}"
    shown: list[RenderableType] = [Padding(Text(measured, style="red"), (0, 0, 0, 2))]
    if m.why:
        shown.append(Padding(Text(f"why: {m.why}"), (0, 0, 0, 4)))
    return shown


def verdict_table(results: list[ExperimentResult]) -> FitTable:
    """One line per experiment, in the order run: held or not, and what it showed."""
    table = FitTable(
        [
            Column("experiment", justify="left", keep=True),
            Column("verdict", justify="left", keep=True),
            Column("what it showed", justify="left", wraps=True),
        ],
        title="verdict",
    )
    for r in results:
        table.add_row(
            r.name,
            "held" if r.held else "did not hold",
            showed(r) if r.held else missed_line(r, why=False) or showed(r),
            style="" if r.held else "red",
        )
    return table
