"""`mesh chaos list|validate|run`: the experiment catalogue, its checker and its runner."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from chaos.experiment import EXPERIMENTS_DIR, Experiment, ExperimentError, load_experiment
from chaos.launcher import LaunchError, Mesh, Ports
from chaos.report import print_result, to_json, write_report
from chaos.runner import ExperimentResult, Runner, Target
from mesh.resilience.policy import PolicyError

app = typer.Typer(
    help="Chaos experiments: steady state, faults, load, verdict.", no_args_is_help=True
)
console = Console(width=None if sys.stdout.isatty() else 150)


@app.command("list")
def list_() -> None:
    """Every experiment in the catalogue with its hypothesis."""
    table = Table("name", "variants", "hypothesis", show_lines=True)
    try:
        entries = [load_experiment(name) for name in _catalogue_names()]
    except ExperimentError as err:
        _refuse(err)
    for path, exp in entries:
        table.add_row(path.stem, ", ".join(v.name for v in exp.variants), exp.hypothesis)
    console.print(table)


def _measured(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def verdict_table(results: list[ExperimentResult]) -> Table:
    table = Table(
        "experiment",
        "verdict",
        "failed expectations (measured, wanted)",
        title="verdict",
        title_justify="left",
    )
    for r in results:
        failed = [
            f"{v.variant}/{v.phase} {v.metric}={_measured(v.measured)} (want {v.bound})"
            for v in r.verdicts
            if not v.passed
        ]
        if r.aborted:
            failed.insert(0, r.aborted)
        table.add_row(
            r.name,
            "[green]held[/green]" if r.held else "[red]did not hold[/red]",
            "\n".join(failed) or "-",
        )
    return table


def _catalogue_names() -> list[str]:
    return [p.stem for p in sorted(EXPERIMENTS_DIR.glob("*.yaml"))]


def _refuse(err: Exception) -> None:
    """Bad input: one line naming the file and the key, exit 2."""
    console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
    raise typer.Exit(2) from None


@app.command()
def validate(
    experiments: Annotated[
        list[str] | None,
        typer.Argument(help="Names from `mesh chaos list`, or paths to YAML files."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Check the whole catalogue.")] = False,
) -> None:
    """Check experiment files without starting anything; exit 2 if any is bad.

    One line per file, OK or its errors: the schema, metric names, toxic attributes, edges,
    services and methods, and each variant's policy with its overrides.
    """
    names = _catalogue_names() if all_ else list(experiments or [])
    if not names:
        _refuse(ExperimentError("name at least one experiment, or --all"))
    bad = 0
    for name in names:
        try:
            path, _ = load_experiment(name)
        except ExperimentError as err:
            bad += 1
            console.print(f"[red]invalid[/red] {escape(str(err))}", soft_wrap=True)
        else:
            console.print(f"[green]OK[/green]      {escape(str(path))}", soft_wrap=True)
    if bad:
        raise typer.Exit(2)


async def _run_all(
    runner: Runner,
    experiments: list[tuple[str, Path, Experiment]],
    progress: Progress,
    reports: Path,
) -> list[ExperimentResult]:
    results = []
    for name, path, exp in experiments:
        progress.console.rule(f"{name}")
        result = await runner.run(name, path, exp)
        print_result(progress.console, result)
        write_report(result, reports / name)
        results.append(result)
    return results


def execute(
    names: list[str], target: str | None, json_path: Path | None, reports: Path, state_dir: Path
) -> list[ExperimentResult]:
    """Run the named experiments (embedded mesh unless `target`); print and write reports.

    Every file is checked, and the target read, before anything starts: bad input is one line
    and exit 2."""
    try:
        if not names:
            raise ExperimentError("name at least one experiment, or --all")
        resolved = [(Path(n).stem, *load_experiment(n)) for n in names]
        remote = Target.parse(target) if target else None
    except (ExperimentError, ValueError) as err:
        _refuse(err)

    mesh = None if remote else Mesh(state_dir=state_dir, ports=Ports.auto())
    started = time.monotonic()
    results: list[ExperimentResult] = []
    try:
        if mesh is not None:
            with console.status("starting the embedded mesh..."):
                mesh.start()
        tgt = remote or Target.from_mesh(mesh)  # type: ignore[arg-type]
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            bar = progress.add_task("starting", total=1)

            def tick(label: str, done: int, total: int) -> None:
                progress.update(bar, description=label, completed=done, total=total)

            results = asyncio.run(_run_all(Runner(tgt, tick), resolved, progress, reports))
    except LaunchError as err:
        console.print(f"[red]could not start the mesh:[/red] {err}")
        raise typer.Exit(1) from None
    except PolicyError as err:
        _refuse(err)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: every fault was removed, the mesh stopped[/yellow]")
        raise typer.Exit(130) from None
    finally:
        if mesh is not None:
            mesh.stop()
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps([to_json(r) for r in results], indent=1))
    console.print(verdict_table(results))
    held = sum(r.held for r in results)
    console.print(
        f"{held} of {len(results)} hypotheses held; reports in {reports}/ "
        f"({time.monotonic() - started:.0f} s in all)"
    )
    return results


@app.command()
def run(
    experiments: Annotated[
        list[str] | None,
        typer.Argument(help="Names from `mesh chaos list`, or paths to YAML files."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Run the whole catalogue.")] = False,
    target: Annotated[
        str | None,
        typer.Option(
            help="Run against a running mesh instead of starting one: `running` (the mesh "
            "`mesh up` describes in var/mesh.json), a mesh.json path, or "
            "toxiproxy=URL,gateway=HOST:PORT[,api_key=KEY][,admin.SERVICE=ADDR]"
            "[,metrics.SERVICE=URL]"
        ),
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write all numbers here.")
    ] = None,
    reports: Annotated[Path, typer.Option(help="Folder for report.md and plots.")] = Path(
        "reports"
    ),
    state_dir: Annotated[Path, typer.Option(help="State of the embedded mesh.")] = Path(
        "var/chaos"
    ),
) -> None:
    """Run experiments; exit 1 when a hypothesis does not hold, 2 on bad input."""
    names = _catalogue_names() if all_ else list(experiments or [])
    results = execute(names, target, json_path, reports, state_dir)
    if not all(r.held for r in results):
        raise typer.Exit(1)
