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
    """The missed block (nothing when every hypothesis held), the partial block (nothing when
    every variant ran), then the verdict table."""
    return Group(
        *missed_block(results), *partial_block(results), verdict_table(results).render(width)
    )


def missed_block(results: list[ExperimentResult]) -> list[RenderableType]:
    """Per experiment that did not hold: each miss, as `variant/phase metric = measured (want
    bound)` and under it why the bound is what it is."""
    missed = sorted(
        (r for r in results if not r.held and not r.partial), key=lambda r: lesson_rank(r.name)
    )
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


def partial_block(results: list[ExperimentResult]) -> list[RenderableType]:
    """Per experiment a variant of which did not run: each such variant and why, since what
    it would have tested is neither held nor refuted."""
    partial = [r for r in results if r.partial]
    if not partial:
        return []
    block: list[RenderableType] = [
        Text(
            f"partial: {len(partial)} of {len(results)} hypotheses not wholly tested",
            style="bold yellow",
        )
    ]
    for r in partial:
        block.append(Text(f"{r.name}: {r.partial}", style="bold"))
        block += [Padding(Text(line, style="yellow"), (0, 0, 0, 2)) for line in r.not_run()]
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
        shown = showed(r) if r.held else missed_line(r, why=False) or showed(r)
        if r.partial:
            shown = "; ".join([*r.not_run(), showed(r)])
        table.add_row(
            r.name,
            r.verdict,
            shown,
            style="" if r.held else "yellow" if r.partial else "red",
        )
    return table


def totals_line(results: list[ExperimentResult], runs: str = "") -> str:
    """`21 of 22 hypotheses held, 1 partial (fault-sources: xds-abort skipped: ...)`: a
    partial counted apart from both held and did not hold, each named with what did not run."""
    held = sum(r.held for r in results)
    line = f"{held} of {len(results)} hypotheses held{runs}"
    partial = [r for r in results if r.partial]
    if partial:
        named = "; ".join(f"{r.name}: {', '.join(r.not_run())}" for r in partial)
        line += f", {len(partial)} partial ({named})"
    missed = len(results) - held - len(partial)
    return line + (f", {missed} did not hold" if missed else "")


PARTIAL_EXIT = 5
"""`mesh chaos run`'s exit when no hypothesis missed but one was partial: apart from 1 (a miss)
and 2 (bad input), and from a topology run's 3 (guard) and 4 (lever), so a CI step can tell
"not tested" from "broken"; like pytest's 5, nothing failed but not everything was tested."""


def exit_code(results: list[ExperimentResult]) -> int:
    """0 every hypothesis held, 1 one did not (a miss outweighs a partial), else 5."""
    if all(r.held for r in results):
        return 0
    return PARTIAL_EXIT if all(r.held or r.partial for r in results) else 1
