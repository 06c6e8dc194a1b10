"""`mesh soak`: the embedded mesh under steady load and scheduled chaos; exit 1 on a miss."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from grpc_resilience_mesh.bench.results import Machine, markdown_table, rewrite
from grpc_resilience_mesh.chaos.session.errors import MeshDidNotStart
from grpc_resilience_mesh.chaos.session.soak import soak_session
from grpc_resilience_mesh.chaos.soak import Growth, SoakConfig, SoakResult, Tick
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr, to_stdout, write_json
from grpc_resilience_mesh.cli.stop_signals import StopSignals, mesh_left_behind

if TYPE_CHECKING:
    from grpc_resilience_mesh.launch.mesh import Mesh

console = Console()


def growth_table(result: SoakResult) -> Table:
    cfg = result.config
    table = Table(
        title=f"growth after a {cfg.warmup:.0f} s warm-up: mean of the first {cfg.window:.0f} s "
        f"vs the last {cfg.window:.0f} s "
        f"(target <= {cfg.max_growth:.0%}; fds +{cfg.fd_slack} more)",
        title_justify="left",
    )
    for column in ("service", "metric", "first", "last", "growth", ""):
        table.add_column(column, justify="left" if column in ("service", "metric") else "right")
    for g in result.growth:
        table.add_row(
            g.service,
            "RSS" if g.metric == "rss_kb" else "open FDs",
            _shown(g.metric, g.first),
            _shown(g.metric, g.last),
            f"{g.growth:+.1%}",
            ("[green]ok[/green]" if g.passed else "[red]GROWTH[/red]") if g.judged else "info",
        )
    return table


def _shown(metric: str, value: float) -> str:
    return f"{value / 1024:.1f} MiB" if metric == "rss_kb" else f"{value:.1f}"


def to_json(result: SoakResult) -> dict[str, object]:
    return {
        "config": asdict(result.config),
        "elapsed_s": round(result.elapsed_s, 1),
        "passed": result.passed,
        "codes": dict(result.codes),
        "acknowledged_charges": result.acknowledged,
        "lost_charges": len(result.lost),
        "lost_keys": result.lost[:50],
        "growth": [
            {**asdict(g), "growth": round(g.growth, 4), "passed": g.passed} for g in result.growth
        ],
        "faults": [{"at_s": at, "fault": what, "on": on} for at, what, on in result.faults],
        "samples": [asdict(s) for s in result.samples],
    }


def results_block(result: SoakResult, machine: Machine, command: str) -> str:
    """The soak's figures for its results page: charges lost, and each process's growth."""
    cfg = result.config
    by_service: dict[str, dict[str, Growth]] = {}
    for g in result.growth:
        by_service.setdefault(g.service, {})[g.metric] = g
    rows = [
        (
            service,
            _growth_cell(metrics.get("rss_kb")),
            _growth_cell(metrics.get("fds")),
            "judged" if any(g.judged for g in metrics.values()) else "reported only",
        )
        for service, metrics in by_service.items()
    ]
    lost = len(result.lost)
    return (
        f"{machine.line()}; {result.elapsed_s:.0f} s at {cfg.rate_per_s:g} requests/s, "
        f"faults toggled: {sum(1 for f in result.faults if f[2])}. **{result.acknowledged:,} "
        f"acknowledged charges, {lost} lost.** Growth from the first {cfg.window:.0f} s after a "
        f"{cfg.warmup:.0f} s warm-up to the last {cfg.window:.0f} s (target <= "
        f"{cfg.max_growth:.0%}; FDs +{cfg.fd_slack} more):\n\n"
        + markdown_table(("process", "RSS", "open FDs", "target"), rows)
        + f"\nTargets {'met' if result.passed else '**missed**'}.\n"
        + f"\nReproduce: `{command}`\n"
    )


def _growth_cell(g: Growth | None) -> str:
    if g is None:
        return "-"
    return f"{_shown(g.metric, g.first)} -> {_shown(g.metric, g.last)} ({g.growth:+.1%})"


def _summary(codes: Counter[str]) -> str:
    return "  ".join(f"{k}: {v}" for k, v in sorted(codes.items()))


def soak(
    duration: Annotated[float, typer.Option(help="Seconds of load and chaos.")] = 600.0,
    rate: Annotated[float, typer.Option(help="Requests per second (home and checkout).")] = 40.0,
    seed: Annotated[int | None, typer.Option(help="Seed for the fault schedule.")] = None,
    json_path: JsonOpt = None,
    state_dir: Annotated[
        Path | None, typer.Option(help="Ledger and logs (default: a fresh temporary dir).")
    ] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="Rewrite this results page's measured block in place with the figures, the "
            "machine and the command (e.g. docs/results/soak.md).",
        ),
    ] = None,
) -> None:
    """Steady load plus random catalogue faults (10 s on / 10 s off); watch RSS and FDs.

    Passes when no service's memory grows more than 10% after the warm-up, nor its open
    descriptors more than 10% plus 4, and no acknowledged charge is missing from the ledger;
    exits 1 otherwise. Ctrl-C, SIGTERM and SIGHUP stop the mesh, then exit 130, 143 or 129;
    a second one within 5 s stops at once.
    """
    command = f"mesh soak --duration {duration:g} --rate {rate:g}"
    command += "" if seed is None else f" --seed {seed}"
    page = None if results is None else (results, command)
    config = SoakConfig(duration_s=duration, rate_per_s=rate, seed=seed)
    with human_output_to_stderr(json_path, console):
        _soak(config, json_path, state_dir, page)


def _soak(
    config: SoakConfig,
    json_path: Path | None,
    state_dir: Path | None,
    page: tuple[Path, str] | None = None,
) -> None:
    """The soak's session (grpc_resilience_mesh/chaos/session/soak.py), printed."""
    try:
        result = soak_session(config, state_dir, SoakProgress(), _stop_signals)
    except MeshDidNotStart as err:
        console.print(f"[red]mesh failed to start:[/red] {err.cause}")
        raise typer.Exit(1) from None
    _report(result, json_path, page)


def _stop_signals(mesh: Mesh | None, remote: object) -> StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP: the soak's faults removed, its mesh stopped."""
    assert mesh is not None, "a soak starts its own mesh"
    done = "every fault was removed, the mesh stopped"
    return StopSignals(console, done, lambda: mesh_left_behind(mesh))


class SoakProgress:
    """The mesh's start, then a bar with the fault on and the codes so far."""

    def starting_mesh(self) -> AbstractContextManager[object]:
        return console.status("starting the mesh...")

    def mesh_started(self, took_s: float) -> None:
        """The bar that follows says it."""

    def stopping_mesh(self) -> AbstractContextManager[object]:
        return console.status("stopping the mesh...")

    @contextmanager
    def soaking(self, config: SoakConfig) -> Iterator[Tick]:
        with Progress(
            TextColumn("[bold]soak[/bold]"),
            BarColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=False,
        ) as progress:
            task = progress.add_task("", total=config.duration_s)

            def tick(elapsed_s: float, codes: Counter[str], fault: str) -> None:
                shown = f"fault: {fault}" if fault else "fault: none"
                progress.update(
                    task,
                    completed=min(elapsed_s, config.duration_s),
                    description=f"{shown}\n{_summary(codes)}",
                )

            yield tick


def _report(result: SoakResult, json_path: Path | None, page: tuple[Path, str] | None) -> None:
    console.print(growth_table(result))
    console.print(f"load: {_summary(result.codes)}")
    console.print(f"faults toggled: {sum(1 for f in result.faults if f[2])}")
    lost = len(result.lost)
    console.print(
        f"acknowledged charges: {result.acknowledged}, lost: "
        + (f"[red]{lost}[/red]" if lost else "[green]0[/green]")
    )
    if json_path is not None:
        write_json(json_path, to_json(result))
        if not to_stdout(json_path):
            console.print(f"samples written to {json_path}")
    if page is not None:  # a miss is a figure too: the page says so
        rewrite(page[0], "Soak", results_block(result, Machine.now(), page[1]))
        console.print(f"wrote {page[0]}")
    if not result.passed:
        console.print("[red]soak target missed[/red]")
        raise typer.Exit(1)
    console.print("[green]soak targets met[/green]")
