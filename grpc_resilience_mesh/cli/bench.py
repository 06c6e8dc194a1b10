"""`mesh bench`: measured costs, in ratios from one interleaved run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from grpc_resilience_mesh.bench.results import (
    Machine,
    ghz_block,
    mesh_block,
    overhead_block,
    proxy_block,
    rewrite,
)
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr, to_stdout, write_json

app = typer.Typer(help="Benchmarks: ratios measured in one run.", no_args_is_help=True)
console = Console()

CallsOpt = Annotated[int, typer.Option(help="Calls per variant per round.")]
ConcOpt = Annotated[int, typer.Option(help="Calls in flight.")]
RoundsOpt = Annotated[int, typer.Option(help="Interleaved rounds.")]
ResultsOpt = Annotated[
    Path | None,
    typer.Option(
        "--results",
        help="Rewrite this results page's measured block in place with the figures, the "
        "machine and the command (e.g. docs/results/mesh-cpu.md).",
    ),
]


def print_result(title: str, result: dict[str, Any]) -> None:
    table = Table(title=title, title_justify="left")
    table.add_column("variant")
    table.add_column("p50 ms", justify="right")
    table.add_column("p99 ms", justify="right")
    table.add_column("calls/s", justify="right")
    table.add_column("p50 ratio", justify="right")
    table.add_column("throughput ratio", justify="right")
    has_cpu = all("loop_cpu_us_per_call" in row for row in result["variants"].values())
    if has_cpu:
        table.add_column("loop CPU us/call", justify="right")
        table.add_column("CPU ratio", justify="right")
    has_process = all("process_cpu_us_per_call" in row for row in result["variants"].values())
    if has_process:
        table.add_column("process CPU us/call", justify="right")
    for name, row in result["variants"].items():
        cpu = [f"{row['loop_cpu_us_per_call']:.0f}", f"{row['cpu_ratio']:.2f}"] if has_cpu else []
        cpu += [f"{row['process_cpu_us_per_call']:.0f}"] if has_process else []
        table.add_row(
            name,
            f"{row['p50_ms']:.2f}",
            f"{row['p99_ms']:.2f}",
            f"{row['throughput']:.0f}",
            f"{row.get('p50_ratio', 1.0):.2f}",
            f"{row.get('throughput_ratio', 1.0):.2f}",
            *cpu,
        )
    console.print(table)


def _write_results(path: Path | None, title: str, block: Callable[[Machine], str]) -> None:
    if path is not None:
        rewrite(path, title, block(Machine.now()))
        console.print(f"wrote {path}")


def _finish(title: str, result: dict[str, Any], json_path: Path | None) -> None:
    with human_output_to_stderr(json_path, console):
        print_result(title, result)
    if json_path is not None:
        write_json(json_path, result)
        if not to_stdout(json_path):
            console.print(f"wrote {json_path}")


@app.command()
def overhead(
    calls: CallsOpt = 3000,
    concurrency: ConcOpt = 64,
    rounds: RoundsOpt = 3,
    json_path: JsonOpt = None,
    results: ResultsOpt = None,
    tracing: Annotated[
        bool,
        typer.Option(
            "--tracing",
            help="Also full+tracing and raw+stock-otel (opentelemetry-instrumentation-"
            "grpc), exporting via a BatchSpanProcessor that OTLP-encodes and drops.",
        ),
    ] = False,
) -> None:
    """Raw grpc.aio vs the full resilience pipeline (no faults; tracing off unless --tracing)."""
    from grpc_resilience_mesh.bench.overhead import run_overhead_bench

    result = asyncio.run(
        run_overhead_bench(calls=calls, concurrency=concurrency, rounds=rounds, tracing=tracing)
    )
    _finish("resilience pipeline overhead", result, json_path)
    command = f"mesh bench overhead --calls {calls} --concurrency {concurrency} --rounds {rounds}"
    command += " --tracing" if tracing else ""
    _write_results(
        results,
        "Resilience pipeline overhead",
        lambda machine: overhead_block(result, machine, command),
    )


@app.command()
def proxy(
    calls: CallsOpt = 3000,
    concurrency: ConcOpt = 64,
    rounds: RoundsOpt = 3,
    json_path: JsonOpt = None,
    results: ResultsOpt = None,
) -> None:
    """A unary gRPC call direct vs through the embedded Toxiproxy (and real 2.12, once built by
    `make peers`), no toxics."""
    from grpc_resilience_mesh.bench.proxy import run_proxy_bench

    result = asyncio.run(run_proxy_bench(calls=calls, concurrency=concurrency, rounds=rounds))
    _finish("Toxiproxy overhead: embedded and real", result, json_path)
    command = f"mesh bench proxy --calls {calls} --concurrency {concurrency} --rounds {rounds}"
    _write_results(
        results,
        "Toxiproxy overhead: embedded and real",
        lambda machine: proxy_block(result, machine, command),
    )


def print_mesh_result(result: dict[str, Any]) -> None:
    table = Table(
        title=f"CPU ms per GetHome ({result['requests']} requests x {result['rounds']} rounds, "
        f"{result['concurrency']} in flight)",
        title_justify="left",
    )
    procs = ["gateway", "recommendation", "profile", "proxy", "client"]
    heads = ("setup", "total", "gw", "rec", "prof", "proxy", "client", "req/s", "p50", "p99")
    for col in (*heads, "CPU x", "req/s x"):
        table.add_column(col, justify="left" if col == "setup" else "right")
    for name, row in result["variants"].items():
        cpu = row["cpu_ms_per_request"]
        table.add_row(
            name,
            f"{row['total_cpu_ms_per_request']:.2f}",
            *(f"{cpu[p]:.2f}" if p in cpu else "-" for p in procs),
            f"{row['throughput_rps']:.0f}",
            f"{row['p50_ms']:.2f}",
            f"{row['p99_ms']:.2f}",
            f"{row['cpu_ratio']:.2f}",
            f"{row['throughput_ratio']:.2f}",
        )
    width = console.width
    console.width = max(width, 120)  # the table is wide; a pipe's 80 columns would cut it
    try:
        console.print(table)
    finally:
        console.width = width
    console.print(
        "CPU ms per request per process (gw, rec, prof, proxy, client; total: their sum); "
        "p50/p99 in ms; x: ratio to the floor"
    )
    for name, row in result["variants"].items():
        if row["degraded"]:
            console.print(
                f"[yellow]{name}: {row['degraded']} of {row['requests']} answers were degraded "
                "(fallback recommendations): its CPU is understated[/yellow]"
            )
    console.print(
        f"ratios against the floor (plain grpc.aio); load average {result['loadavg_1m']:.2f} "
        f"on {result['cpus']} CPUs"
    )


@app.command("mesh")
def mesh_cmd(
    requests: Annotated[
        int, typer.Option(min=10, max=100_000, help="GetHome calls per variant per round.")
    ] = 1500,
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="Calls in flight.")] = 16,
    rounds: Annotated[int, typer.Option(min=1, max=20, help="Interleaved rounds.")] = 3,
    variant: Annotated[
        list[str] | None,
        typer.Option(
            "--variant",
            help="Measure only these (repeatable): direct, direct-no-relay, proxied, traced, "
            "traced-otlp. "
            "The floor is always measured.",
        ),
    ] = None,
    json_path: JsonOpt = None,
    results: ResultsOpt = None,
    client: Annotated[
        str,
        typer.Option(
            "--client",
            help="ours: our load client only; ghz: ghz too (built by `make peers`), after each "
            "of our windows on the same setup, and --results gets both clients' figures.",
        ),
    ] = "ours",
) -> None:
    """CPU per GetHome in every process: the mesh's variants against plain grpc.aio."""
    from grpc_resilience_mesh.bench.ghz import GhzError
    from grpc_resilience_mesh.bench.mesh import DEFAULT_VARIANTS, VARIANTS, run_mesh_bench

    chosen = tuple(variant) if variant else DEFAULT_VARIANTS
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown or client not in ("ours", "ghz"):
        bad = f"variant {unknown[0]!r}" if unknown else f"client {client!r} (ours or ghz)"
        console.print(f"unknown {bad}; known variants: {', '.join(VARIANTS)}")
        raise typer.Exit(2)
    try:
        result = run_mesh_bench(
            requests=requests,
            concurrency=concurrency,
            rounds=rounds,
            variants=chosen,
            ghz=client == "ghz",
        )
    except GhzError as err:
        console.print(f"[red]ghz[/red]: {err}")
        raise typer.Exit(1) from None
    _mesh_output(result, json_path)
    command = f"mesh bench mesh --requests {requests} --concurrency {concurrency} --rounds {rounds}"
    command += "".join(f" --variant {v}" for v in variant or ())
    if "ghz" in result:
        _ghz_results(result, command, results)
        return
    _write_results(
        results,
        "CPU per request: the mesh against plain grpc.aio",
        lambda machine: mesh_block(result, machine, command),
    )


def _mesh_output(result: dict[str, Any], json_path: Path | None) -> None:
    with human_output_to_stderr(json_path, console):
        print_mesh_result(result)
    if json_path is not None:
        write_json(json_path, result)
        if not to_stdout(json_path):
            console.print(f"wrote {json_path}")


def _ghz_results(result: dict[str, Any], command: str, results: Path | None) -> None:
    print_ghz_comparison(result["ghz"])
    command += f" --client ghz --results {results}" if results else " --client ghz"
    _write_results(
        results,
        "Two clients, one mesh: ghz beside our load client",
        lambda machine: ghz_block(result, machine, command),
    )


def print_ghz_comparison(rows: dict[str, Any]) -> None:
    """ghz beside our client on each setup: req/s, p50, p99 and ghz / ours."""
    table = Table(title="ghz beside our load client (medians over rounds)", title_justify="left")
    for col in ("setup", "req/s ours", "req/s ghz", "p50 ours", "p50 ghz", "p99 ours", "p99 ghz"):
        table.add_column(col, justify="left" if col == "setup" else "right")
    table.add_column("ghz/ours req/s, p50, p99", justify="right")
    for name, row in rows.items():
        ratios = ", ".join(f"{row[f'{f}_ghz_over_ours']:.2f}" for f in ("rps", "p50_ms", "p99_ms"))
        table.add_row(
            name,
            *(
                f"{row[f'{c}_{f}']:.1f}"
                for f in ("rps", "p50_ms", "p99_ms")
                for c in ("ours", "ghz")
            ),
            ratios,
        )
    console.print(table)


@app.command()
def startup(
    runs: Annotated[int, typer.Option(help="Starts of each, the median shown.")] = 5,
    state_dir: Annotated[
        Path, typer.Option(help="`mesh call home` runs against the `mesh up` of this folder.")
    ] = Path("var"),
    results: ResultsOpt = None,
    traces_mb: Annotated[
        int,
        typer.Option(
            help="MB of span files (written to a temporary folder, then deleted) to time "
            "`mesh traces ID` over; 0 leaves that row out."
        ),
    ] = 900,
) -> None:
    """Start-up: `mesh --version`, `--help`, `mesh call home` against a running mesh, a
    service from exec to SERVING, and `mesh traces ID` over as many span files as `mesh up`
    keeps, each with PYTHONDONTWRITEBYTECODE=1 (median wall and CPU)."""
    from grpc_resilience_mesh.bench.startup import run_startup_bench, table

    figures = run_startup_bench(runs, state_dir, traces_mb)
    console.print(table(figures))
    _write_results(
        results,
        "Start-up",
        lambda machine: (
            f"{machine.line()}.\n\n{table(figures)}\n\n"
            f"`mesh bench startup --runs {runs} --traces-mb {traces_mb} --results {results}` "
            f"(a `mesh up` running in "
            f"{state_dir} for the `mesh call home` row)\n"
        ),
    )
