"""`mesh demo --results` and `mesh chaos run --results`: the run's figures on its results page
(docs/results/catalogue.md), rewritten in place between the page's marks
(grpc_resilience_mesh/bench/results.py): the time in the command, what held and what missed, the
capacity, the load generator's line, and each experiment's time in the runner against its plan
(grpc_resilience_mesh/chaos/run/plan.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Annotated

import typer

from grpc_resilience_mesh.bench.results import Machine, markdown_table, rewrite
from grpc_resilience_mesh.chaos.report.missed import misses
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.plan import plan

TITLE = "The experiment catalogue: `make demo` and `make verify`"

PageOpt = Annotated[
    Path | None,
    typer.Option(
        "--results",
        help="Rewrite this results page's measured block in place with the run's figures, the "
        "machine and the command (e.g. docs/results/catalogue.md).",
    ),
]


@dataclass(frozen=True)
class RunFigures:
    """What a run measured beside its results: its time in the command (the mesh's start
    included; None for the start against a running mesh), the capacity the runner measured per
    RPC mix, the load generator's summary line, how many times the list ran, and whether the
    mesh started under xDS (the plan's restarts depend on it)."""

    took_s: float
    start_s: float | None
    capacity: dict[tuple[str, ...], dict[str, float]]
    generator: str
    repeat: int = 1
    xds: bool = False


@dataclass(frozen=True)
class ResultsPage:
    """Where the run's figures go, and the command that reproduces them."""

    path: Path
    command: str

    def write(self, results: list[ExperimentResult], figures: RunFigures) -> None:
        rewrite(self.path, TITLE, catalogue_block(results, figures, Machine.now(), self.command))


def chaos_run_page(
    path: Path | None, chosen: str, repeat: int, xds: bool, toxiproxy: str
) -> ResultsPage | None:
    """`mesh chaos run`'s page, with the command that reproduces the run (`chosen`: its names,
    or --all; a --target is not repeated: it may carry a key)."""
    if path is None:
        return None
    options = (f" --repeat {repeat}" if repeat > 1 else "") + (" --xds" if xds else "")
    options += f" --toxiproxy {toxiproxy}" if toxiproxy != "embedded" else ""
    return ResultsPage(path, f"mesh chaos run {chosen}{options} --results {path}")


def runner_s(result: ExperimentResult) -> float:
    """The experiment's seconds in the runner: the median over its runs with --repeat."""
    return median(r.took_s for r in result.repeats or [result])


def catalogue_block(
    results: list[ExperimentResult], figures: RunFigures, machine: Machine, command: str
) -> str:
    """The run's summary line and table, what missed, and each experiment against its plan."""
    held = sum(r.held for r in results)
    in_all = f" in all {figures.repeat} runs" if figures.repeat > 1 else ""
    capacity = ", ".join(
        f"{_mix(key)} {cap['capacity_per_s']:.0f}" for key, cap in figures.capacity.items()
    )
    start = "a running mesh" if figures.start_s is None else f"{figures.start_s:.1f} s"
    summary = (
        f"**{figures.took_s:.0f} s**",
        start,
        f"{sum(runner_s(r) for r in results):.0f} s",
        f"**{held} of {len(results)}**{in_all}",
        capacity or "-",
    )
    heads = ("in the command", "the mesh's start", "in the experiments", "held", "capacity, req/s")
    runs = "once" if figures.repeat == 1 else f"{figures.repeat} times on one mesh"
    return (
        f"{machine.line()}; {len(results)} experiments, the list run {runs}.\n\n"
        + markdown_table(heads, [summary])
        + f"\n{figures.generator}\n"
        + _missed(results)
        + _against_plan(results, figures)
        + f"\nReproduce: `{command}`\n"
    )


def _mix(rpcs: tuple[str, ...]) -> str:
    """`home`, or `mixed (3 home : 1 checkout)`."""
    counts = Counter(rpcs)
    if len(counts) == 1:
        return rpcs[0]
    return "mixed (" + " : ".join(f"{n} {rpc}" for rpc, n in counts.items()) + ")"


def _missed(results: list[ExperimentResult]) -> str:
    lines = [
        f"- {r.name}: " + "; ".join(m.line(why=False) for m in misses(r))
        for r in results
        if not r.held
    ]
    return "\nWhat missed:\n\n" + "\n".join(lines) + "\n" if lines else ""


def _against_plan(results: list[ExperimentResult], figures: RunFigures) -> str:
    planned = {
        p.name: p.total_s for p in plan(((r.name, r.experiment) for r in results), figures.xds)
    }
    rows = sorted(((runner_s(r), planned[r.name], r.name) for r in results), reverse=True)
    measured_all, planned_all = sum(m for m, _, _ in rows), sum(p for _, p, _ in rows)
    each = "its journal's start to end" + (
        f", the median of {figures.repeat} runs" if figures.repeat > 1 else ""
    )
    return (
        f"\nEach experiment in the runner ({each}; reports are written outside it) against its "
        "plan (`mesh chaos plan`), longest first:\n\n"
        + markdown_table(
            ("experiment", "measured s", "planned s", "measured / planned"),
            [
                *((name, f"{m:.1f}", f"{p:.1f}", _ratio(m, p)) for m, p, name in rows),
                (
                    "**all**",
                    f"**{measured_all:.1f}**",
                    f"**{planned_all:.1f}**",
                    f"**{_ratio(measured_all, planned_all)}**",
                ),
            ],
        )
    )


def _ratio(measured: float, planned: float) -> str:
    return f"{measured / planned:.2f}" if planned > 0 else "-"
