"""`mesh traces`: recent traces, one trace as a waterfall, or a file for Jaeger's UI; from the
local span files or, with --jaeger, from Jaeger's copy."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, RenderableType
from rich.markup import escape

from grpc_resilience_mesh.chaos.report.table_fit import Column, FitTable
from grpc_resilience_mesh.client import jaeger_query as jq
from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.client.trace_index import TraceIndex


def _operation(name: str) -> str:
    """'Recv.mesh.v1.Gateway.GetHome' -> 'Gateway.GetHome': the RPC, without the span kind and
    the package every root shares (the waterfall shows the full span name)."""
    return name.removeprefix("Recv.").removeprefix("mesh.v1.")


def _table(rows: list[tr.TraceSummary], where: Path | str, width: int) -> RenderableType:
    table = FitTable(
        [
            Column("trace id", justify="left", keep=True),
            Column("root operation", justify="left", wraps=True),
            Column("started", justify="left"),
            Column("ms"),
            Column("status", justify="left", wraps=True),
            Column("spans"),
        ],
        priority=[0, 3, 4, 1, 2, 5],
        title=f"recent traces ({where})",
        notes=["`mesh traces TRACE_ID` (or a prefix) draws one as a waterfall"],
    )
    for r in rows:
        started = time.strftime("%H:%M:%S", time.localtime(r.start_ns / 1e9))
        status = r.status + (", degraded" if r.degraded else "")
        style = (
            "" if r.status == "OK" and not r.degraded else ("yellow" if r.status == "OK" else "red")
        )
        table.add_row(
            r.trace_id,
            f"{_operation(r.operation)} [{r.service}]",
            started,
            f"{r.duration_ms:.1f}",
            status,
            str(r.span_count),
            style=style,
        )
    return table.render(width)


JAEGER_SERVICE = "gateway"
"""Whose traces `--jaeger` lists: every request of `mesh call` and the load starts there."""


def _from_jaeger(url: str, trace_id: str | None, limit: int) -> dict[str, list[tr.Span]]:
    """The traces to show, from Jaeger: one by id (a prefix is looked up among the recent ones),
    or the gateway's recent ones. Exit 2 with one line when Jaeger cannot give them."""
    try:
        if trace_id is not None:
            trace_id = jq.trace_id_or_prefix(trace_id)
            if len(trace_id) == 32:
                return {trace_id: jq.jaeger_trace(url, trace_id)}
        found = jq.jaeger_recent(url, JAEGER_SERVICE, max(limit, 100) if trace_id else limit)
        if trace_id is None:
            return found
        match = tr.find_trace(found, trace_id)
        if match is None:
            raise jq.JaegerError(f"no single trace with id {trace_id!r} in Jaeger at {url}")
        return {match[0]: match[1]}
    except jq.JaegerError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None


def _from_files(where: Path, trace_id: str | None, console: Console) -> dict[str, list[tr.Span]]:
    files = tr.trace_files(where)
    if not files:
        console.print(f"no span files in {where} (is MESH_TRACING=0, or a collector set?)")
        raise typer.Exit(1)
    if trace_id is None:
        return tr.group_traces(tr.load_spans(files))
    match = TraceIndex(where).find(files, trace_id)
    if match is None:
        console.print(f"no single trace with id {trace_id!r} in {where}")
        raise typer.Exit(1)
    return {match[0]: match[1]}


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
    jaeger: Annotated[
        str | None,
        typer.Option(
            "--jaeger",
            metavar="URL",
            help="Read Jaeger's copy instead, through its query API at URL "
            "(e.g. http://127.0.0.1:16686).",
        ),
    ] = None,
    limit: Annotated[int, typer.Option(help="Traces to list.")] = 20,
) -> None:
    """Traces the services wrote locally (no collector), or Jaeger's copy: list, waterfall,
    or Jaeger UI export.

    `mesh up` keeps them in var/traces; `mesh chaos run` and `mesh demo` in var/chaos/traces
    (their --state-dir's traces/). With --jaeger, the gateway's recent traces, or TRACE_ID's,
    come from Jaeger's query API and are drawn the same way.
    """
    console = Console()  # made per command: its width is the terminal's (or COLUMNS) now
    if jaeger is not None:
        where: Path | str = jaeger
        found = _from_jaeger(jaeger, trace_id, limit)
        if not found:
            console.print(f"no traces of service {JAEGER_SERVICE!r} in Jaeger at {jaeger}")
            raise typer.Exit(1)
    else:
        where = traces_dir or state_dir / "traces"
        found = _from_files(where, trace_id, console)
    if export is not None:
        export.write_text(json.dumps(tr.to_jaeger(found)))
        console.print(f"wrote {len(found)} trace(s) to {export} (Jaeger UI: Search > JSON File)")
        return
    if trace_id is None:
        console.print(_table(tr.recent(found, limit), where, console.width))
        return
    ((tid, spans),) = found.items()
    summary = tr.summarise(tid, spans)
    console.print(
        f"trace {tid}: {summary.operation} {summary.duration_ms:.1f} ms "
        f"{summary.status}{' degraded' if summary.degraded else ''}"
    )
    for line in tr.waterfall(spans, console.width):
        console.print(escape(line), highlight=False, soft_wrap=True)
