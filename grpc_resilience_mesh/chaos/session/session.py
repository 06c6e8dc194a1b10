"""A chaos run's session: resolve the experiments, start the embedded mesh or attach to a running
one, run the rounds, write each report while the next experiment runs, and index the traces once
the embedded mesh has stopped. `mesh chaos run` and `mesh demo` call run_session with their
options and a view that prints; a test or a program may call it with the quiet defaults.

Every file is checked, and the target read, before anything starts: bad input is
SessionRefused with nothing started (errors.py draws the tree)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.session.errors import SessionRefused
from grpc_resilience_mesh.chaos.session.mesh_scope import Scope, mesh_scope
from grpc_resilience_mesh.chaos.session.report_writer import ReportWriter
from grpc_resilience_mesh.chaos.session.rounds import Resolved, run_rounds
from grpc_resilience_mesh.chaos.session.view import GuardFor, Quiet, SessionView, plain_guard
from grpc_resilience_mesh.chaos.session.xds import with_xds, without_xds
from grpc_resilience_mesh.chaos.topology.lever import LeverPulled, refuse_if_pulled
from grpc_resilience_mesh.client.trace_index import index_traces
from grpc_resilience_mesh.launch.private import private_umask
from grpc_resilience_mesh.launch.xds_plane import XDS_BINARY
from grpc_resilience_mesh.loadgen.in_process import generator_command
from grpc_resilience_mesh.services.policy.loading import PolicyError


@dataclass(frozen=True)
class SessionOptions:
    """What to run and where; the defaults are `mesh chaos run`'s."""

    names: list[str]
    """Catalogue names or YAML paths."""
    target: str | None = None
    """A running mesh (`running`, a mesh.json, or addresses); None: start the embedded one."""
    reports: Path = Path("reports")
    state_dir: Path = Path("var/chaos")
    repeat: int = 1
    short_sweeps: bool = False
    """A sweep's shorter variant (the demo's)."""
    xds: bool = False
    """Every variant under xDS, on an embedded mesh started so (xds.py)."""
    leave_out_xds: bool = False
    """Where mesh-xds is not built, leave the `xds: true` variants out (the demo's choice;
    SessionResult.left_out names them) instead of running them to be skipped."""


@dataclass
class SessionResult:
    """What the session ran and measured: the last run of each experiment, in order."""

    results: list[ExperimentResult]
    took_s: float
    """From the mesh's start (or the attach) until the traces were indexed."""
    start_s: float | None = None
    """The embedded mesh's start; None against a running mesh."""
    capacity: dict[tuple[str, ...], dict[str, float]] = field(default_factory=dict)
    """The runner's capacity per RPC mix."""
    remeasured: set[tuple[str, ...]] = field(default_factory=set)
    """The mixes an experiment measured again for itself."""
    generator: str | None = None
    """The load generator's line (its CPU per request); None when no runner was made."""
    left_out: list[str] = field(default_factory=list)
    """`experiment/variant` left out for want of mesh-xds (SessionOptions.leave_out_xds)."""


def resolve(
    names: list[str], target: str | None, short_sweeps: bool = False
) -> tuple[Resolved, Target | None]:
    """Each file loaded and checked, and the target read, before anything starts."""
    try:
        if not names:
            raise ExperimentError("name at least one experiment, or --all")
        resolved = [(Path(n).stem, *load_experiment(n, short_sweeps)) for n in names]
        remote = Target.parse(target) if target else None
        generator_command()  # MESH_LOADGEN names a generator that is there (LoadGeneratorError)
        refuse_if_pulled()  # `mesh chaos stop`: no run starts until it is released
    except (ExperimentError, ValueError, LeverPulled) as err:
        raise SessionRefused(str(err)) from None
    return resolved, remote


def run_session(
    options: SessionOptions,
    view: SessionView | None = None,
    guard_for: GuardFor = plain_guard,
) -> SessionResult:
    """Run the named experiments (on the embedded mesh unless `options.target`) and write
    their reports; SessionRefused on bad input, SessionFailed when the run could not finish."""
    shown = view or Quiet()
    resolved, remote = resolve(options.names, options.target, options.short_sweeps)
    plane = None
    left_out: list[str] = []
    if options.xds:
        resolved, plane = with_xds(resolved, options.state_dir, options.target)
    elif options.leave_out_xds and not XDS_BINARY.is_file():
        resolved, left_out = without_xds(resolved)
    private_umask()  # the state dir is the owner's alone; reports are shared_files()
    started = time.monotonic()
    out = SessionResult([], 0.0, left_out=left_out)
    try:
        with mesh_scope(remote, options.state_dir, shown, guard_for, plane) as scope:
            out.start_s = scope.start_s
            _rounds(scope, resolved, options, shown, out)
    except PolicyError as err:
        raise SessionRefused(str(err)) from None
    if remote is None:
        with shown.indexing_traces():  # `mesh traces ID` on a trace the reports name: at once
            index_traces(options.state_dir / "traces")
    out.took_s = time.monotonic() - started
    return out


def _rounds(
    scope: Scope,
    resolved: Resolved,
    options: SessionOptions,
    view: SessionView,
    out: SessionResult,
) -> None:
    target = scope.target()
    with view.rounds([exp for _, _, exp in resolved] * options.repeat) as rounds:
        runner = Runner(target, rounds.step)
        out.capacity, out.remeasured = runner.capacity, runner.remeasured
        with ReportWriter(options.reports, target.state_dir) as writer:
            out.results = scope.run(run_rounds(runner, resolved, rounds, writer, options.repeat))
        out.generator = runner.cpu.line(runner.generator.kind)
