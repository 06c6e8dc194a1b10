"""`mesh chaos plan`: each experiment's planned seconds, from its file alone
(grpc_resilience_mesh/chaos/run/plan.py), without starting anything: what `mesh demo` (`--demo`) or
`mesh chaos run` will spend where."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from grpc_resilience_mesh.chaos.experiment.lesson_order import in_lesson_order
from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR, ExperimentError
from grpc_resilience_mesh.chaos.run.plan import RESTART_S, minutes, plan

console = Console()


def plan_command(
    experiments: Annotated[
        list[str] | None,
        typer.Argument(help="Names from `mesh chaos list`, or paths to YAML files."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="The whole catalogue.")] = False,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo", help="As `mesh demo` runs them: the whole catalogue, the demo's variants."
        ),
    ] = False,
    xds: Annotated[bool, typer.Option("--xds", help="A mesh started under xDS.")] = False,
) -> None:
    """Each experiment's planned seconds (loads, restarts, capacity) and the total; exit 2 on
    bad input. Starts nothing: the plan is what the files schedule, or a run measured (*)."""
    names = list(experiments or [])
    if all_ or demo:
        names = in_lesson_order(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))
    try:
        if not names:
            raise ExperimentError("name at least one experiment, or --all, or --demo")
        loaded = [(Path(n).stem, load_experiment(n, demo)[1]) for n in names]
    except ExperimentError as err:
        console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(2) from None
    planned = plan(loaded, xds)
    table = Table(
        "variants",
        "loads",
        "restarts",
        "capacity",
        "planned",
        title="planned seconds (restarts: how many)",
    )
    table.columns.insert(0, Column("experiment", no_wrap=True))
    for p in planned:
        table.add_row(
            p.name,
            str(p.variants),
            f"{p.loads_s:.1f}{'*' if p.measured else ''}",
            str(p.restarts),
            f"{p.capacity_s:.1f}",
            f"{p.total_s:.1f}",
        )
    console.print(table)
    total = sum(p.total_s for p in planned)
    console.print(
        f"planned {minutes(total)} ({total:.0f} s) for {len(planned)} "
        f"experiment{'' if len(planned) == 1 else 's'}"
        f"{' as the demo runs them' if demo else ''}; restarts at {RESTART_S:g} s each; "
        "a run adds what no file fixes (backlogs draining, the machine's load)",
        soft_wrap=True,
    )
    if any(p.measured for p in planned):
        console.print(
            "* loads as a run of the demo took them (grpc_resilience_mesh/chaos/run/"
            "measured.py), where the files' count is a guess; the others as the files count them",
            soft_wrap=True,
        )
