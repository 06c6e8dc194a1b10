"""`mesh chaos run` of a topology experiment (a file with a `topology:` key,
grpc_resilience_mesh/chaos/topology/): the run imported when it starts. `mesh chaos validate`
checks such files with the model alone (chaos/topology/model.py check_file)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from grpc_resilience_mesh.chaos.experiment.kind import is_topology_file
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.cli.chaos_cmd import console, refuse


def run_topology(name: str, dry_run: bool, reports: Path, junit: Path | None = None) -> None:
    """Run one topology experiment; exit with its code (0 held, 1 not held, 2 bad input,
    3 aborted by guard, 4 stopped by lever); `junit`: its expectations as JUnit XML too."""
    from grpc_resilience_mesh.chaos.topology.lever import LeverPulled
    from grpc_resilience_mesh.chaos.topology.run import TopologyRefused, run_topology_experiment

    path = Path(name)
    if is_topology_file(path):
        refuse(
            ExperimentError(
                f"{path}: a topology, not an experiment: run an experiment "
                "file whose `topology:` names it"
            )
        )
    try:
        outcome = run_topology_experiment(
            path, dry_run=dry_run, reports=reports, view=lambda line: console.print(escape(line))
        )
    except (ExperimentError, TopologyRefused, LeverPulled) as err:
        refuse(err)
    if junit is not None:
        from grpc_resilience_mesh.chaos.report.junit import write_junit
        from grpc_resilience_mesh.chaos.report.junit_run import topology_suite

        write_junit(junit, [topology_suite(path.stem, outcome.result)])
    colour = "green" if outcome.exit_code == 0 else "red"
    console.print(
        f"[{colour}]{escape(outcome.verdict)}[/{colour}]; report {escape(str(outcome.report))}",
        soft_wrap=True,
    )
    raise typer.Exit(outcome.exit_code)
