"""The `mesh` command: bring the mesh up, poke it, break it, measure it."""

from __future__ import annotations

import typer

from chaos.cli import bench, call, chaos_cmd, demo, toxiproxy, traces, up

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
app.command("traces")(traces.traces)


def main() -> None:
    app()
