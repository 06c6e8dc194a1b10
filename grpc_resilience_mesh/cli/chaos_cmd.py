"""`mesh chaos list|validate|run|plan|export|stop`: the experiment catalogue and its checker
here; its run (grpc_resilience_mesh/cli/chaos_run.py: the session of
grpc_resilience_mesh/chaos/session/, printed with its verdict), its plan
(grpc_resilience_mesh/cli/chaos_plan.py), its Chaos Toolkit export
(grpc_resilience_mesh/cli/chaos_export.py) and the machine's lever
(grpc_resilience_mesh/cli/chaos_stop.py), each imported when it runs.

Checking a file needs the experiment model and the checks' and scenarios' declarations
(grpc_resilience_mesh/chaos/scenarios/declarations.py), not the runner, the launcher or the reports'
plotting: `mesh chaos validate` imports no launcher and no matplotlib
(tests/unit/chaos/test_validate_imports.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, ClassVar, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR, ExperimentError
from grpc_resilience_mesh.cli.lazy import Lazy, LazyGroup


class ChaosGroup(LazyGroup):
    """`mesh chaos`'s commands, in the order its help lists them, each imported when it runs."""

    lazy: ClassVar[dict[str, Lazy]] = {
        "export": Lazy(
            "grpc_resilience_mesh.cli.chaos_export:export",
            "Write the experiment as Chaos Toolkit experiments, one per variant; run one with\n"
            "`chaos run FILE` (MESH_STATE_FILE: the mesh.json of `mesh up`). A variant Chaos "
            "Toolkit\ncannot express is skipped with the reason; exit 1 when none could be "
            "written, 2 on bad\ninput.",
        ),
        "plan": Lazy(
            "grpc_resilience_mesh.cli.chaos_plan:plan_command",
            "Each experiment's planned seconds (loads, restarts, capacity) and the total; exit "
            "2 on\nbad input. Starts nothing: the plan is what the files schedule, or a run "
            "measured (*).",
        ),
        "list": Lazy(
            "grpc_resilience_mesh.cli.chaos_cmd:list_",
            "Every experiment in the catalogue with its hypothesis.",
        ),
        "validate": Lazy(
            "grpc_resilience_mesh.cli.chaos_cmd:validate",
            "Check experiment files without starting anything; exit 2 if any is bad.",
        ),
        "run": Lazy(
            "grpc_resilience_mesh.cli.chaos_run:run",
            "Run experiments; exit 1 when a hypothesis does not hold, 2 on bad input, 5 when "
            "one is\npartial (a variant skipped or in error, and nothing that ran missed).",
        ),
        "grid": Lazy(
            "grpc_resilience_mesh.cli.chaos_grid:grid_command",
            "Run an overload grid; exit 1 when the claim misses at a point, 2 on bad input.",
        ),
        "compare": Lazy(
            "grpc_resilience_mesh.cli.chaos_compare:compare_command",
            "Compare repeated runs against a baseline; exit 1 on a regression, 2 on bad input.",
        ),
        "stop": Lazy(
            "grpc_resilience_mesh.cli.chaos_stop:stop_command",
            "Stop every chaos experiment running on this machine and refuse new ones until "
            "released.",
        ),
    }


app = typer.Typer(
    cls=ChaosGroup,
    help="Chaos experiments: steady state, faults, load, verdict.",
    no_args_is_help=True,
)
console = Console(width=None if sys.stdout.isatty() else 150)


def list_() -> None:
    """Every experiment in the catalogue with its hypothesis."""
    table = Table("name", "variants", "hypothesis", show_lines=True)
    try:
        entries = [load_experiment(name) for name in catalogue_names()]
    except ExperimentError as err:
        refuse(err)
    for path, exp in entries:
        table.add_row(path.stem, ", ".join(v.name for v in exp.variants), exp.hypothesis)
    console.print(table)


def catalogue_names() -> list[str]:
    # Imported here: `validate FILE` needs no lesson order (test_validate_imports.py's cap).
    from grpc_resilience_mesh.chaos.experiment.lesson_order import in_lesson_order

    return in_lesson_order(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))


def refuse(err: Exception) -> NoReturn:
    """Bad input: one line naming the file and the key, exit 2."""
    console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
    raise typer.Exit(2) from None


def validate(
    experiments: Annotated[
        list[str] | None,
        typer.Argument(help="Names from `mesh chaos list`, or paths to YAML files."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Check the whole catalogue.")] = False,
) -> None:
    """Check experiment files without starting anything; exit 2 if any is bad.

    One line per file, OK or its errors: the schema, metric names, toxic attributes, edges,
    services and methods, and each variant's policy with its overrides. A topology file
    (`kind: topology`) or a topology experiment (a `topology:` key) is checked as one.
    """
    names = catalogue_names() if all_ else list(experiments or [])
    if not names:
        refuse(ExperimentError("name at least one experiment, or --all"))
    bad = 0
    for name in names:
        try:
            path = _checked(name)
        except ExperimentError as err:
            bad += 1
            console.print(f"[red]invalid[/red] {escape(str(err))}", soft_wrap=True)
        else:
            console.print(f"[green]OK[/green]      {escape(str(path))}", soft_wrap=True)
    if bad:
        raise typer.Exit(2)


def _checked(name: str) -> Path:
    """A catalogue experiment, a topology experiment or a topology file, each by its model."""
    from grpc_resilience_mesh.chaos.experiment.kind import is_topology_kind

    if is_topology_kind(name):
        from grpc_resilience_mesh.chaos.topology.model import check_file

        return check_file(name)
    return load_experiment(name)[0]
