"""What `mesh fault` prints: which proxies (one per replica of the edge's dependency) and which
processes a fault was set on, and the listings, whole at 80 columns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich import box
from rich.table import Table

from grpc_resilience_mesh.console.faults import AppFault, Toxic, edge_of
from grpc_resilience_mesh.launch.xds_faults import XdsFault
from grpc_resilience_mesh.services.topology import EDGES, edge_proxies


def _edge_proxy_count(edge: str) -> int:
    return next((len(edge_proxies(e)) for e in EDGES if e.name == edge), 1)


def where(asked: str, proxies: Sequence[str]) -> str:
    """`on edge 'E' (proxies E, E-2: every replica)`, `on proxy 'E-2' only (edge E has 2)` or,
    for an edge with one proxy, `on proxy 'E'`."""
    edge = edge_of(asked)
    count = _edge_proxy_count(edge)
    if count <= 1:
        return f"on proxy '{asked}'"
    if asked != edge:
        return f"on proxy '{asked}' only (one of edge {edge}'s {count} replica proxies)"
    return f"on edge '{edge}' (proxies {', '.join(proxies)}: every replica)"


def toxic_added(toxic: Toxic, asked: str) -> str:
    return f"Added {toxic.stream} {toxic.type} toxic '{toxic.name}' {where(asked, toxic.proxies)}"


def toxic_removed(name: str, asked: str, proxies: Sequence[str]) -> str:
    return f"Removed toxic '{name}' {where(asked, proxies)}"


def processes_note(instances: Iterable[str]) -> str:
    """` (processes profile, profile-2)` when a service runs as several replicas."""
    found = list(instances)
    return f" (processes {', '.join(found)})" if len(found) > 1 else ""


def _proxies_cell(toxic: Toxic) -> str:
    count = _edge_proxy_count(toxic.edge)
    if count <= 1 or not toxic.proxies:
        return toxic.edge
    if len(toxic.proxies) >= count:
        return f"{toxic.edge}\n  all {count} replica proxies"
    return toxic.edge + "".join(f"\n  {p}" for p in toxic.proxies)


def _table(title: str) -> Table:
    return Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False
    )


def toxics_table(toxics: Sequence[Toxic]) -> Table:
    """Each toxic: its edge and the replica proxies it is on, its name, kind and attributes."""
    table = _table("toxics")
    table.add_column("edge / on proxies", no_wrap=True)
    table.add_column("name / toxic", no_wrap=True)
    table.add_column("attributes", no_wrap=True)
    table.add_column("set by")
    for t in toxics:
        kind = f"{t.type} {t.stream}" + (f" {t.toxicity:.0%}" if t.toxicity < 1 else "")
        attrs = "\n".join(f"{k}={v}" for k, v in t.attributes.items()) or "-"
        table.add_row(_proxies_cell(t), f"{t.name}\n  {kind}", attrs, t.owner)
    return table


def app_faults_table(faults: Sequence[AppFault]) -> Table:
    """Each app fault: service, method (short name), rate, code, delay, pushback, who set it."""
    table = _table("app faults")
    table.add_column("service", no_wrap=True)
    table.add_column("method", overflow="fold")
    for name in ("rate", "code", "delay", "pushback"):
        table.add_column(name, no_wrap=True)
    table.add_column("set by", overflow="fold")
    for f in faults:
        table.add_row(
            f.service,
            f.method.rsplit("/", 1)[-1],
            f"{f.error_rate:g}",
            f.code,
            f"{f.delay_s:g}s",
            "-" if f.pushback_ms < 0 else f"{f.pushback_ms} ms",
            f.owner,
        )
    return table


def xds_faults_table(faults: Sequence[XdsFault]) -> Table:
    """Each xDS (A33) fault: edge, route (method, or * for every call), abort, delay, who."""
    table = _table("xDS faults (A33, in the caller's gRPC client)")
    table.add_column("edge", no_wrap=True)
    table.add_column("method", overflow="fold")
    table.add_column("abort", no_wrap=True)
    table.add_column("delay", no_wrap=True)
    table.add_column("set by", no_wrap=True)
    for f in faults:
        table.add_row(
            f.edge,
            f.method,
            f"{f.abort_percent:g}% {f.abort_code}" if f.abort_percent else "-",
            f"{f.delay_percent:g}% x {f.delay_s * 1000:g} ms" if f.delay_percent else "-",
            f.owner,
        )
    return table
