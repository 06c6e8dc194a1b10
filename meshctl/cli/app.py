"""The `mesh` command: bring the mesh up, poke it, break it, measure it."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from typer.core import TyperOption

from meshctl.cli import (
    bench,
    call,
    certs,
    chaos_cmd,
    demo,
    fault,
    soak,
    status,
    toxiproxy,
    traces,
    up,
    watch,
)
from meshctl.cli.jobs import app as jobs_app
from meshctl.cli.json_out import bare_json_to_stdout
from meshctl.cli.restart import restart

DISTRIBUTION = "grpc-resilience-mesh"


def _flag_shows_no_type() -> None:
    """Typer 0.29 prints `<bool>` beside every flag (--help included), as if it took a value;
    a flag takes none, so its help shows no type."""
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


_flag_shows_no_type()

app = typer.Typer(
    name="mesh",
    help="A gRPC microservice mesh that shows what deadlines, retries, circuit breakers, "
    "bulkheads and fallbacks do under injected faults.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"mesh {version(DISTRIBUTION)}")
        except PackageNotFoundError:
            typer.echo("mesh (not installed: no version)")
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


app.command("up")(up.up)
app.command("restart")(restart)
app.add_typer(call.app, name="call")
app.command("toxiproxy")(toxiproxy.toxiproxy)
app.add_typer(bench.app, name="bench")
app.command("demo")(demo.demo)
app.add_typer(chaos_cmd.app, name="chaos")
app.add_typer(jobs_app, name="jobs")
app.command("traces")(traces.traces)
app.command("certs")(certs.certs)
app.command("soak")(soak.soak)
app.command("status")(status.status)
app.add_typer(fault.app, name="fault")
app.command("watch")(watch.watch)


def main() -> None:
    app(args=bare_json_to_stdout(sys.argv[1:]), prog_name="mesh")
