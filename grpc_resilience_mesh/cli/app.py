"""The `mesh` command: bring the mesh up, poke it, break it, measure it."""

from __future__ import annotations

import sys
from typing import Annotated, ClassVar

import typer
from typer.core import TyperOption

from grpc_resilience_mesh.cli.lazy import Lazy, LazyGroup
from grpc_resilience_mesh.cli.version import version_line


def _flag_shows_no_type() -> None:
    """Typer 0.29 prints `<bool>` beside every flag (--help included), as if it took a value;
    a flag takes none, so its help shows no type."""
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


_flag_shows_no_type()


class MeshGroup(LazyGroup):
    """`mesh`'s commands, in the order its help lists them, each imported when it runs."""

    lazy: ClassVar[dict[str, Lazy]] = {
        "up": Lazy(
            "grpc_resilience_mesh.cli.up:up",
            "Start the mesh on 127.0.0.1, wait until all of it is SERVING, stay in the foreground.",
        ),
        "restart": Lazy(
            "grpc_resilience_mesh.cli.restart:restart",
            "Restart one process of the mesh `mesh up` runs (found through <state dir>/mesh.json):"
            "\nSIGTERM, SIGKILL after 10 s if it has not exited, started again on the same ports"
            " under\nthe same policy. Exit 0 once it serves again, 1 if it does not, 2 for an "
            "unknown service\nor when no mesh runs.",
        ),
        "toxiproxy": Lazy(
            "grpc_resilience_mesh.cli.toxiproxy:toxiproxy",
            "Run the embedded Toxiproxy server (same HTTP API as Toxiproxy 2.12) until Ctrl-C.",
        ),
        "demo": Lazy(
            "grpc_resilience_mesh.cli.demo:demo",
            "Start the embedded mesh, run every experiment of the catalogue, print the verdict.",
        ),
        "traces": Lazy(
            "grpc_resilience_mesh.cli.traces:traces",
            "Traces the services wrote locally (no collector), or Jaeger's copy: list, "
            "waterfall,\nor Jaeger UI export.",
        ),
        "certs": Lazy(
            "grpc_resilience_mesh.cli.certs:certs",
            "Write a dev CA and a TLS certificate per service (SANs: name, localhost, 127.0.0.1).",
        ),
        "soak": Lazy(
            "grpc_resilience_mesh.cli.soak:soak",
            "Steady load plus random catalogue faults (10 s on / 10 s off); watch RSS and FDs.",
        ),
        "status": Lazy(
            "grpc_resilience_mesh.cli.status:status",
            "Breakers (per method), bulkheads, retry budgets and faults of every edge, now.",
        ),
        "env": Lazy(
            "grpc_resilience_mesh.cli.env:env",
            "Print the running mesh's Toxiproxy API address and token as `export` lines:"
            '\neval "$(mesh env)", then curl or any Toxiproxy client can reach the API.',
        ),
        "watch": Lazy(
            "grpc_resilience_mesh.cli.watch:watch",
            "A live terminal view of every edge (rates, p50/p99, breakers, bulkheads, budgets,"
            "\nfaults), refreshed every INTERVAL seconds; Ctrl-C stops it.",
        ),
        "call": Lazy(
            "grpc_resilience_mesh.cli.call:app", "Call the gateway's RPCs and print the answer."
        ),
        "load": Lazy(
            "grpc_resilience_mesh.cli.load:app",
            "Background load on the running mesh (the console's): start, stop, status.",
        ),
        "bench": Lazy(
            "grpc_resilience_mesh.cli.bench:app", "Benchmarks: ratios measured in one run."
        ),
        "chaos": Lazy(
            "grpc_resilience_mesh.cli.chaos_cmd:app",
            "Chaos experiments: steady state, faults, load, verdict.",
        ),
        "jobs": Lazy(
            "grpc_resilience_mesh.cli.jobs:app",
            "Receipts: the background-job queue and the local mailbox.",
        ),
        "fault": Lazy(
            "grpc_resilience_mesh.cli.fault:app",
            "Add, remove, list or reset faults on the running mesh.",
        ),
        "topology": Lazy(
            "grpc_resilience_mesh.cli.topology_cmd:app",
            "A topology of your own services, held up.",
        ),
    }


app = typer.Typer(
    name="mesh",
    cls=MeshGroup,
    help="A gRPC microservice mesh that shows what deadlines, retries, circuit breakers, "
    "bulkheads and fallbacks do under injected faults.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # The group's own help and usage errors drawn by click, not rich: typer's rich help
    # imports rich.markdown, pygments and rich.traceback (0.36 s of `mesh --help` -> 0.16 s
    # CPU). Each command's own help stays rich (its module is imported then anyway).
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _main(
    _: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """A gRPC microservice mesh that shows what deadlines, retries, circuit breakers,
    bulkheads and fallbacks do under injected faults."""


def main() -> None:
    """`mesh` (through grpc_resilience_mesh.cli.entry); a bad environment variable is one line
    naming it, and exit 2."""
    from grpc_resilience_mesh.services.config_error import ConfigError

    args = sys.argv[1:]
    if "--json" in args:  # a command without it (`chaos validate`) loads no json_out
        from grpc_resilience_mesh.cli.json_out import bare_json_to_stdout

        args = bare_json_to_stdout(args)
    try:
        app(args=args, prog_name="mesh")
    except ConfigError as err:
        sys.stderr.write(f"mesh: {err}\n")
        raise SystemExit(2) from None
