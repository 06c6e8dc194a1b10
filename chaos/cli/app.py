"""The `mesh` command: bring the mesh up, poke it, break it, measure it."""

from __future__ import annotations

import typer

from chaos.cli import bench, call, certs, chaos_cmd, demo, soak, toxiproxy, traces, up
from chaos.cli.jobs import app as jobs_app

app = typer.Typer(
    name="mesh",
    help="A gRPC microservice mesh that shows what deadlines, retries, circuit breakers, "
    "bulkheads and fallbacks do under injected faults.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("up")(up.up)
app.add_typer(call.app, name="call")
app.command("toxiproxy")(toxiproxy.toxiproxy)
app.add_typer(bench.app, name="bench")
app.command("demo")(demo.demo)
app.add_typer(chaos_cmd.app, name="chaos")
app.add_typer(jobs_app, name="jobs")
app.command("traces")(traces.traces)
app.command("certs")(certs.certs)
app.command("soak")(soak.soak)


def main() -> None:
    app()
