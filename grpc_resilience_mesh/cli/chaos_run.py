"""`mesh chaos run`: the runner with its progress, its reports and its verdict
(grpc_resilience_mesh/cli/chaos_verdict.py), imported only when a run starts
(grpc_resilience_mesh/cli/chaos_cmd.py): validating, listing and planning load none of it."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment, ExperimentError
from grpc_resilience_mesh.chaos.report.result_json import to_json
from grpc_resilience_mesh.chaos.report.tables import print_result
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.eta import Eta, about, kind
from grpc_resilience_mesh.chaos.run.plan import plan
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.cli.chaos_cmd import catalogue_names, console, refuse
from grpc_resilience_mesh.cli.chaos_results import PageOpt, ResultsPage, RunFigures, chaos_run_page
from grpc_resilience_mesh.cli.chaos_verdict import verdict_screen
from grpc_resilience_mesh.cli.chaos_xds import XdsRunOpt, XdsRunRefused, with_xds
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr, write_json
from grpc_resilience_mesh.cli.report_writer import ReportFailed, ReportWriter
from grpc_resilience_mesh.cli.stop_signals import StopSignals, mesh_left_behind, target_left_behind
from grpc_resilience_mesh.cli.toxiproxy import ServerChoice, choose_server
from grpc_resilience_mesh.client.trace_index import index_traces
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.private import private_umask, shared_files
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.loadgen.in_process import generator_command
from grpc_resilience_mesh.services.policy.loading import PolicyError

logging.getLogger("matplotlib").setLevel(logging.ERROR)  # font-cache notes and the like


class RunProgress:
    """Two lines under the reports: the whole run ("experiment 3/13 ..., about 2 min left")
    and the current step (the runner's and the scenarios' progress callback)."""

    def __init__(self, progress: Progress, experiments: list[Experiment]) -> None:
        self.progress = progress
        planned = plan((str(n), exp) for n, exp in enumerate(experiments))
        self.eta = Eta([p.total_s for p in planned], [kind(e) for e in experiments])
        self.count = len(experiments)
        self.started = time.monotonic()
        self.run = progress.add_task("", total=self.count, left=self.left)
        self.step_task = progress.add_task("", total=None, left=lambda: "")

    def left(self) -> str:
        return about(self.eta.left_s(time.monotonic() - self.started))

    def start(self, n: int, name: str) -> None:
        self.started = time.monotonic()
        self.progress.update(
            self.run, description=f"experiment {n}/{self.count}: {name}", completed=n - 1
        )
        self.progress.update(
            self.step_task, description=f"{name}: starting", completed=0, total=None
        )

    def step(self, label: str, done: int, total: int) -> None:
        self.progress.update(self.step_task, description=label, completed=done, total=total)

    def finish(self) -> None:
        self.eta.finished(time.monotonic() - self.started)
        self.progress.update(self.run, completed=len(self.eta.actual))


class _LeftColumn(ProgressColumn):
    """The task's `left` field, computed at each refresh so it moves between callbacks."""

    def render(self, task: Task) -> Text:
        left = task.fields.get("left")
        return Text(left() if callable(left) else "", style="progress.remaining")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _LeftColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


async def _run_all(
    runner: Runner,
    experiments: list[tuple[str, Path, Experiment]],
    shown: RunProgress,
    writer: ReportWriter,
    repeat: int = 1,
) -> list[ExperimentResult]:
    """Run the experiments in order, the whole list `repeat` times on the same mesh (capacity
    measured once, or per experiment where its load asks); each report shows every run so far.
    The last run of each is returned, carrying all its runs in `repeats`."""
    runs: dict[str, list[ExperimentResult]] = {}
    try:
        await _rounds(runner, experiments, shown, writer, repeat, runs)
    finally:
        await runner.close()
    return [found[-1] for found in runs.values()]


async def _rounds(
    runner: Runner,
    experiments: list[tuple[str, Path, Experiment]],
    shown: RunProgress,
    writer: ReportWriter,
    repeat: int,
    runs: dict[str, list[ExperimentResult]],
) -> None:
    n = 0
    for round_ in range(1, repeat + 1):
        for name, path, exp in experiments:
            n += 1
            shown.start(n, name if repeat == 1 else f"{name} (run {round_}/{repeat})")
            label = name if repeat == 1 else f"{name}: run {round_}/{repeat}"
            shown.progress.console.rule(f"{n}/{len(experiments) * repeat} {label}")
            started = time.time()
            result = await runner.run(name, path, exp)
            ended = time.time()
            result.took_s = ended - started
            if repeat > 1:
                runs.setdefault(name, []).append(result)
                result.repeats = list(runs[name])
            else:
                runs[name] = [result]
            print_result(shown.progress.console, result)
            writer.submit(result, started, ended)  # written while the next one runs
            shown.finish()


def execute(
    names: list[str],
    target: str | None,
    json_path: Path | None,
    reports: Path,
    state_dir: Path,
    repeat: int = 1,
    short_sweeps: bool = False,
    xds: bool = False,
    page: ResultsPage | None = None,
) -> list[ExperimentResult]:
    """Run the named experiments (embedded mesh unless `target`); print and write reports.

    Every file is checked, and the target read, before anything starts: bad input is one line
    and exit 2. `short_sweeps`: a sweep's shorter variant (the demo's). `xds`: every variant
    under xDS (grpc_resilience_mesh/cli/chaos_xds.py). `page`: the run's figures rewritten on it."""
    resolved, remote = _resolve(names, target, short_sweeps)
    plane = None
    try:
        resolved, plane = with_xds(resolved, state_dir, target) if xds else (resolved, None)
    except XdsRunRefused as err:
        refuse(err)
    private_umask()  # the state dir is the owner's alone; reports are shared_files()
    mesh = None if remote else Mesh(state_dir=state_dir, ports=Ports.auto(), xds=plane)
    started = time.monotonic()
    results: list[ExperimentResult] = []
    runner: Runner | None = None
    start_s = None
    with _stop_signals(mesh, remote) as signals:  # SIGTERM, SIGHUP: as Ctrl-C
        try:
            if mesh is not None:
                start_s = _start(mesh)
            tgt = remote or Target.from_mesh(mesh)  # type: ignore[arg-type]
            with _progress() as progress:
                shown = RunProgress(progress, [exp for _, _, exp in resolved] * repeat)
                runner = Runner(tgt, shown.step)
                with ReportWriter(reports, tgt.state_dir) as writer:
                    results = signals.run(_run_all(runner, resolved, shown, writer, repeat))
        except (LaunchError, ReportFailed) as err:  # a report's failure: every experiment ran
            said = f"could not start the mesh: {err}" if isinstance(err, LaunchError) else str(err)
            console.print(f"[red]{escape(said)}[/red]")
            raise typer.Exit(1) from None
        except PolicyError as err:
            refuse(err)
        finally:
            if mesh is not None:
                with signals.cleaning():
                    mesh.stop()
    _after_run(mesh is not None, state_dir, json_path, results)
    took_s = time.monotonic() - started
    _summary(results, repeat, reports, took_s, runner)
    if page is not None and runner is not None:
        line = runner.cpu.line(runner.generator.kind)
        page.write(results, RunFigures(took_s, start_s, runner.capacity, line, repeat, xds))
        console.print(f"wrote {page.path}")
    return results


def _stop_signals(mesh: Mesh | None, remote: Target | None) -> StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP: the faults removed, the policy put back, our mesh stopped."""
    if mesh is not None:
        done = "every fault was removed, the mesh stopped"
        return StopSignals(console, done, lambda: mesh_left_behind(mesh))
    assert remote is not None
    done = "every fault was removed, the target mesh is still running"
    return StopSignals(console, done, lambda: target_left_behind(remote))


def _after_run(
    embedded: bool, state_dir: Path, json_path: Path | None, results: list[ExperimentResult]
) -> None:
    """The embedded mesh's traces indexed (it has stopped), and the run's JSON written."""
    if embedded:
        _index_traces(state_dir / "traces")
    if json_path is not None:
        with shared_files():
            write_json(json_path, [to_json(r) for r in results])


def _start(mesh: Mesh) -> float:
    """Start the embedded mesh, saying how long it took; its seconds."""
    started = time.monotonic()
    with console.status("starting the embedded mesh..."):
        mesh.start()
    took_s = time.monotonic() - started
    console.print(f"started the embedded mesh in {took_s:.1f} s")
    return took_s


def _index_traces(traces_dir: Path) -> None:
    """Index the run's spans now the mesh has stopped (grpc_resilience_mesh.client.trace_index), so
    `mesh traces ID` on a trace the reports name answers at once, not after reading every span
    file."""
    with console.status("indexing the traces..."):
        index_traces(traces_dir)


def _resolve(
    names: list[str], target: str | None, short_sweeps: bool = False
) -> tuple[list[tuple[str, Path, Experiment]], Target | None]:
    """Each file loaded and checked, and the target read, before anything starts: bad input
    is one line and exit 2."""
    try:
        if not names:
            raise ExperimentError("name at least one experiment, or --all")
        resolved = [(Path(n).stem, *load_experiment(n, short_sweeps)) for n in names]
        remote = Target.parse(target) if target else None
        generator_command()  # MESH_LOADGEN names a generator that is there (LoadGeneratorError)
    except (ExperimentError, ValueError) as err:
        refuse(err)
    return resolved, remote


def _summary(
    results: list[ExperimentResult],
    repeat: int,
    reports: Path,
    took_s: float,
    runner: Runner | None,
) -> None:
    console.print(verdict_screen(results, console.width))
    held = sum(r.held for r in results)
    runs = f" in all {repeat} runs" if repeat > 1 else ""
    console.print(
        f"{held} of {len(results)} hypotheses held{runs}; reports in {reports}/ "
        f"({took_s:.0f} s in all)"
    )
    if runner is not None:
        for key, cap in runner.capacity.items():
            when = (
                "the last of its measures (an experiment that asks for it measures its own)"
                if key in runner.remeasured
                else "measured once for the whole run"
            )
            console.print(f"capacity ({'+'.join(key)}): {cap['capacity_per_s']:.0f} req/s, {when}")
        console.print(runner.cpu.line(runner.generator.kind))


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
            "toxiproxy=URL,gateway=HOST:PORT[,api_key=KEY][,admin_token=TOKEN]"
            "[,admin.SERVICE=ADDR][,metrics.SERVICE=URL]"
        ),
    ] = None,
    json_path: JsonOpt = None,
    reports: Annotated[Path, typer.Option(help="Folder for report.md and plots.")] = Path(
        "reports"
    ),
    state_dir: Annotated[Path, typer.Option(help="State of the embedded mesh.")] = Path(
        "var/chaos"
    ),
    repeat: Annotated[
        int,
        typer.Option(
            min=1,
            max=20,
            help="Run the experiments N times on the same mesh (capacity measured once, "
            "or before each experiment whose load asks); "
            "report each expectation's median [min-max] and how many runs held it. A "
            "hypothesis holds only if it held in every run.",
        ),
    ] = 1,
    toxiproxy: ServerChoice = "embedded",
    xds: XdsRunOpt = False,
    results_page: PageOpt = None,
) -> None:
    """Run experiments; exit 1 when a hypothesis does not hold, 2 on bad input.

    Ctrl-C, SIGTERM and SIGHUP remove the faults, put a --target mesh back on its policy and
    stop the run's own mesh, then exit 130, 143 or 129; a second one within 5 s stops at once.
    """
    names = catalogue_names() if all_ else list(experiments or [])
    choose_server(toxiproxy, "mesh chaos run", console)
    page = chaos_run_page(
        results_page, "--all" if all_ else " ".join(names), repeat, xds, toxiproxy
    )
    with human_output_to_stderr(json_path, console):
        results = execute(names, target, json_path, reports, state_dir, repeat, xds=xds, page=page)
    if not all(r.held for r in results):
        raise typer.Exit(1)
