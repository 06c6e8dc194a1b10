"""`mesh traces`: recent traces, one trace as a waterfall, or a file for Jaeger's UI."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from chaos import traces as tr

console = Console()


def _table(rows: list[tr.TraceSummary], where: Path) -> Table:
    table = Table(title=f"recent traces ({where})", title_justify="left")
    table.add_column("trace id")
    table.add_column("root operation")
    table.add_column("started")
    table.add_column("ms", justify="right")
    table.add_column("status")
    table.add_column("degraded")
    table.add_column("spans", justify="right")
    for r in rows:
        started = time.strftime("%H:%M:%S", time.localtime(r.start_ns / 1e9))
        status = r.status if r.status == "OK" else f"[red]{r.status}[/red]"
        table.add_row(
            r.trace_id,
            escape(f"{r.operation} [{r.service}]"),
            started,
            f"{r.duration_ms:.1f}",
            status,
            "[yellow]yes[/yellow]" if r.degraded else "",
            str(r.span_count),
        )
    return table


def traces(
    trace_id: Annotated[str | None, typer.Argument(help="Show this trace (or id prefix).")] = None,
    export: Annotated[
        Path | None,
        typer.Option("--export", help="Write Jaeger UI JSON (this trace, or all) to FILE."),
    ] = None,
    state_dir: Annotated[
        Path, typer.Option(help="The mesh's state directory; spans are read from its traces/.")
    ] = Path("var"),
    traces_dir: Annotated[
        Path | None, typer.Option("--dir", help="Read *.jsonl span files from here instead.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Traces to list.")] = 20,
) -> None:
    """Traces the services wrote locally (no collector): list, waterfall, or Jaeger export.

    `mesh up` keeps them in var/traces, the chaos runner in var/chaos/traces, the demo in
    var/demo/traces.
    """
    where = traces_dir or state_dir / "traces"
    files = tr.trace_files(where)
    if not files:
        console.print(f"no span files in {where} (is MESH_TRACING=0, or a collector set?)")
        raise typer.Exit(1)
    found = tr.group_traces(tr.load_spans(files))
    if trace_id is not None:
        match = tr.find_trace(found, trace_id)
        if match is None:
            console.print(f"no single trace with id {trace_id!r} in {where}")
            raise typer.Exit(1)
        found = {match[0]: match[1]}
    if export is not None:
        export.write_text(json.dumps(tr.to_jaeger(found)))
        console.print(f"wrote {len(found)} trace(s) to {export} (Jaeger UI: Search > JSON File)")
        return
    if trace_id is None:
        console.print(_table(tr.recent(found, limit), where))
        return
    ((tid, spans),) = found.items()
    summary = tr.summarise(tid, spans)
    console.print(
        f"trace {tid}: {summary.operation} {summary.duration_ms:.1f} ms "
        f"{summary.status}{' degraded' if summary.degraded else ''}"
    )
    for line in tr.waterfall(spans):
        console.print(escape(line), highlight=False, soft_wrap=True)
