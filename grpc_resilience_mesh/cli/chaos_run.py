"""`mesh chaos run`: its options parsed, the session run (grpc_resilience_mesh/chaos/session/), its
progress, tables and verdict printed (grpc_resilience_mesh/cli/chaos_progress.py and
chaos_verdict.py), imported only when a run starts (grpc_resilience_mesh/cli/chaos_cmd.py):
validating, listing and planning load none of it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from grpc_resilience_mesh.chaos.report.junit import write_junit
from grpc_resilience_mesh.chaos.report.junit_run import run_suites
from grpc_resilience_mesh.chaos.report.result_json import to_json
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session.errors import SessionFailed, SessionRefused
from grpc_resilience_mesh.chaos.session.session import SessionOptions, SessionResult, run_session
from grpc_resilience_mesh.cli.chaos_cmd import catalogue_names, console, refuse
from grpc_resilience_mesh.cli.chaos_progress import ConsoleView
from grpc_resilience_mesh.cli.chaos_results import PageOpt, ResultsPage, RunFigures, chaos_run_page
from grpc_resilience_mesh.cli.chaos_verdict import exit_code, totals_line, verdict_screen
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr, write_json
from grpc_resilience_mesh.cli.stop_signals import StopSignals, mesh_left_behind, target_left_behind
from grpc_resilience_mesh.cli.toxiproxy import ServerChoice, choose_server
from grpc_resilience_mesh.launch.private import shared_files

if TYPE_CHECKING:
    from grpc_resilience_mesh.chaos.run.target import Target
    from grpc_resilience_mesh.launch.mesh import Mesh

logging.getLogger("matplotlib").setLevel(logging.ERROR)  # font-cache notes and the like

XdsRunOpt = Annotated[
    bool,
    typer.Option(
        "--xds",
        help="Every variant under xDS (as `xds: true`): the embedded mesh starts as "
        "`mesh up --xds` (mesh-xds from `make peers`).",
    ),
]


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
    junit: Path | None = None,
    leave_out_xds: bool = False,
) -> list[ExperimentResult]:
    """Run the session (embedded mesh unless `target`) and print it: bad input is one line and
    exit 2, a run that could not finish exit 1. `page`: the run's figures rewritten on it;
    `junit`: a JUnit XML file of every expectation (chaos/report/junit_run.py)."""
    options = SessionOptions(
        names, target, reports, state_dir, repeat, short_sweeps, xds, leave_out_xds
    )
    try:
        ran = run_session(options, ConsoleView(console), _stop_signals)
    except SessionRefused as err:
        refuse(err)
    except SessionFailed as err:  # a report's failure: every experiment ran
        console.print(f"[red]{escape(str(err))}[/red]")
        raise typer.Exit(1) from None
    if json_path is not None:
        with shared_files():
            write_json(json_path, [to_json(r) for r in ran.results])
    if junit is not None:
        with shared_files():
            write_junit(junit, run_suites(ran.results))
    _summary(ran, repeat, reports)
    if page is not None and ran.generator is not None:
        figures = RunFigures(ran.took_s, ran.start_s, ran.capacity, ran.generator, repeat, xds)
        page.write(ran.results, figures)
        console.print(f"wrote {page.path}")
    return ran.results


DryRunOpt = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Topology experiments only: start the services and proxies, resolve the method, "
        "render every request and judge the steady-state load by the guard; inject nothing.",
    ),
]


JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit",
        metavar="FILE",
        help="Also write JUnit XML: a testsuite per experiment, a testcase per expectation "
        "(a skipped variant's as skipped, with the reason; an errored one's as error).",
    ),
]


def _topology_run(names: list[str], dry_run: bool, reports: Path, junit: Path | None) -> None:
    """A topology experiment runs here and exits; catalogue names go on as before."""
    from grpc_resilience_mesh.chaos.experiment.kind import is_topology_kind
    from grpc_resilience_mesh.cli.chaos_topology import run_topology

    topology = [name for name in names if is_topology_kind(name)]
    if topology and len(names) > 1:
        refuse(ValueError(f"{topology[0]}: a topology experiment runs alone; name only it"))
    if topology:
        run_topology(topology[0], dry_run, reports, junit)
    if dry_run:
        refuse(ValueError("--dry-run is for a topology experiment (a file with `topology:`)"))


def _stop_signals(mesh: Mesh | None, remote: Target | None) -> StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP: the faults removed, the policy put back, our mesh stopped."""
    if mesh is not None:
        done = "every fault was removed, the mesh stopped"
        return StopSignals(console, done, lambda: mesh_left_behind(mesh))
    assert remote is not None
    done = "every fault was removed, the target mesh is still running"
    return StopSignals(console, done, lambda: target_left_behind(remote))


def _summary(ran: SessionResult, repeat: int, reports: Path) -> None:
    results = ran.results
    console.print(verdict_screen(results, console.width))
    runs = f" in all {repeat} runs" if repeat > 1 else ""
    console.print(
        f"{escape(totals_line(results, runs))}; reports in {reports}/ ({ran.took_s:.0f} s in all)",
        soft_wrap=True,
    )
    if ran.left_out:
        console.print(
            f"left out, mesh-xds not built: {', '.join(ran.left_out)}; `make xds-plane` builds "
            "it (needs go) and the next run includes them",
            soft_wrap=True,
        )
    if ran.generator is not None:
        for key, cap in ran.capacity.items():
            when = (
                "the last of its measures (an experiment that asks for it measures its own)"
                if key in ran.remeasured
                else "measured once for the whole run"
            )
            console.print(f"capacity ({'+'.join(key)}): {cap['capacity_per_s']:.0f} req/s, {when}")
        console.print(ran.generator)


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
    dry_run: DryRunOpt = False,
    junit: JunitOpt = None,
) -> None:
    """Run experiments; exit 1 when a hypothesis does not hold, 2 on bad input, 5 when one is
    partial (a variant skipped or in error, and nothing that ran missed).

    Ctrl-C, SIGTERM and SIGHUP remove the faults, put a --target mesh back on its policy and
    stop the run's own mesh, then exit 130, 143 or 129; a second one within 5 s stops at once.

    A topology experiment (a file with a `topology:` key: your own services) runs alone, its
    guard on: exit 0 held, 1 not held, 2 bad input (nothing injected), 3 aborted by guard,
    4 stopped by the lever (`mesh chaos stop`); its report in REPORTS/<run id>/.
    """
    names = catalogue_names() if all_ else list(experiments or [])
    _topology_run(names, dry_run, reports, junit)
    choose_server(toxiproxy, "mesh chaos run", console)
    page = chaos_run_page(
        results_page, "--all" if all_ else " ".join(names), repeat, xds, toxiproxy
    )
    with human_output_to_stderr(json_path, console):
        results = execute(
            names, target, json_path, reports, state_dir, repeat, xds=xds, page=page, junit=junit
        )
    raise typer.Exit(exit_code(results))
