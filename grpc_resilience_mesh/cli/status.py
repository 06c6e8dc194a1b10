"""`mesh status`: the running mesh's edges now: rates, latency, breakers per method, bulkheads,
retry budgets and faults (who set them), and each service's admission (in flight against its
concurrency limit, refusals by reason), from the services' metrics, Toxiproxy and FaultAdmin."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console, Group
from rich.table import Table

from grpc_resilience_mesh.cli.json_out import (
    JsonOpt,
    human_output_to_stderr,
    to_stdout,
    write_json,
)
from grpc_resilience_mesh.client.state import STATE_DIR, STATE_FILE, MeshState
from grpc_resilience_mesh.console.view import CONSOLE_WINDOW_S, MeshView

console = Console()
notes = Console(stderr=True)
"""Where `--json FILE` says it wrote the file, stdout left empty."""

StateDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="The running mesh's state dir (default: $MESH_STATE_DIR, else var).",
    ),
]


def running_state(state_dir: Path | None, command: str) -> MeshState:
    """The mesh `mesh up` recorded in STATE_DIR/mesh.json, or exit 2 saying where it looked."""
    where = state_dir or Path(STATE_DIR.read())
    try:
        state = MeshState.load(where)
    except (OSError, ValueError, TypeError) as err:
        console.print(f"[red]{command}:[/red] {where / STATE_FILE}: unreadable ({err})")
        raise typer.Exit(2) from None
    if state is None:
        console.print(
            f"[red]{command}:[/red] no running mesh: {where / STATE_FILE} not found "
            "(start one with `mesh up`, or pass --state-dir)",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    return state


def _n(value: float | None, digits: int = 1, unit: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def breakers_text(stats: dict[str, Any]) -> str:
    """Breakers that are not closed, by method; `closed` when none is (or `-`: no breaker)."""
    parts = []
    for b in stats["breakers"]:
        method = b["method"].rsplit("/", 1)[-1]
        if b["state"] == "open":
            parts.append(f"[red]{method} open {b['probe_in_s']:.1f}s[/red]")
        elif b["state"] == "half-open":
            parts.append(f"[yellow]{method} half-open[/yellow]")
    return "\n".join(parts) or ("closed" if stats["breakers"] else "-")


def _proxies_note(toxic: dict[str, Any], edge: dict[str, Any], all_proxies: int) -> str:
    """Where a toxic is when the edge has several proxies (one per replica): `on every
    replica's proxy`, or the proxies it is on by name."""
    on = toxic.get("proxies") or []
    if all_proxies <= 1 or not on:
        return ""
    if len(on) >= all_proxies:
        return f" on all {all_proxies} replica proxies"
    return " on " + ", ".join(on) + " only"


def fault_lines(snapshot: dict[str, Any]) -> list[str]:
    """One line per edge with faults: its toxics (on which replica proxies), app faults and xDS
    (A33) faults, and who set each."""
    proxy_count: dict[str, int] = {}
    for replica in snapshot.get("replicas", []):
        for p in replica["proxies"]:
            proxy_count[p["edge"]] = proxy_count.get(p["edge"], 0) + 1
    lines = []
    for edge in snapshot["edges"]:
        parts = [
            f"{t['type']} "
            + " ".join(f"{k}={v}" for k, v in t["attributes"].items())
            + f" {t['stream']}{_proxies_note(t, edge, proxy_count.get(edge['name'], 1))}"
            + f" ({t['owner']})"
            for t in edge["toxics"]
        ]
        parts += [
            f"{f['method'].rsplit('/', 1)[-1]} {f['code']} {f['error_rate']:.0%}"
            + (f" +{f['delay_s']:g}s" if f["delay_s"] else "")
            + f" ({f['owner']})"
            for f in edge["app_faults"]
        ]
        parts += [
            f"xDS {f['method']}"
            + (f" {f['abort_code']} {f['abort_percent']:g}%" if f["abort_percent"] else "")
            + (f" +{f['delay_s']:g}s {f['delay_percent']:g}%" if f["delay_percent"] else "")
            + f" ({f['owner']})"
            for f in edge.get("xds_faults", [])
        ]
        if edge["proxy"] is not None and not edge["proxy"]["enabled"]:
            parts.append("[red]proxy disabled[/red]")
        if parts:
            lines.append(f"{edge['name']}: " + "; ".join(parts))
    return lines


def _table(title: str | None = None) -> Table:
    return Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False
    )


def edge_table(snapshot: dict[str, Any], title: str) -> Table:
    """Each edge's traffic: rates, errors, latency, retries, fallbacks, throttled attempts (74
    columns: whole at 80)."""
    table = _table(title)
    table.add_column("edge", no_wrap=True)
    for name in ("req/s", "err", "p50", "p99", "retry/s", "fallb/s", "thrtl/s"):
        table.add_column(name, justify="right", no_wrap=True)
    for edge in snapshot["edges"]:
        s = edge["stats"]
        table.add_row(
            edge["name"],
            _n(s["calls_per_s"]),
            f"{s['error_rate']:.0%}",
            _n(s["p50_ms"], 1),
            _n(s["p99_ms"], 1),
            _n(s["retries_per_s"]),
            _n(s["fallbacks_per_s"]),
            _n(s.get("throttled_per_s", 0.0)),
        )
    return table


def protection_table(snapshot: dict[str, Any]) -> Table:
    """Each protected edge's bulkhead slots, retry budget tokens and breakers not closed."""
    table = _table()
    table.add_column("edge", no_wrap=True)
    table.add_column("bulkhead", justify="right", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("breakers", overflow="fold")
    for edge in snapshot["edges"]:
        s = edge["stats"]
        if s["bulkhead_limit"] is None and s["budget_max_tokens"] is None and not s["breakers"]:
            continue
        bulkhead = (
            "-"
            if s["bulkhead_limit"] is None
            else f"{s['bulkhead_in_use']:.0f}/{s['bulkhead_limit']:.0f}"
        )
        budget = (
            "-"
            if s["budget_max_tokens"] is None
            else f"{s['budget_tokens']:.1f}/{s['budget_max_tokens']:.0f}"
        )
        table.add_row(edge["name"], bulkhead, budget, breakers_text(s))
    return table


def _ejection_text(replica: dict[str, Any]) -> str:
    by_caller = replica["ejection"]
    if not by_caller:
        return "-"
    out = sorted(c for c, state in by_caller.items() if state == "ejected")
    return "[red]ejected by " + ", ".join(out) + "[/red]" if out else "in"


def replica_table(snapshot: dict[str, Any]) -> Table:
    """Each replica: the calls it served, whether ejection keeps it out of a caller's rotation
    (`-`: that caller's ejection is off), and the faults on the proxies in front of it, by the
    caller whose calls cross each."""
    table = _table()
    table.add_column("replica", no_wrap=True)
    table.add_column("served/s", justify="right", no_wrap=True)
    table.add_column("err", justify="right", no_wrap=True)
    table.add_column("ejection", no_wrap=True)
    table.add_column("faults on its proxies", overflow="fold")
    for replica in snapshot.get("replicas", []):
        faults = [
            f"from {p['caller']}: "
            + ", ".join([*p["toxics"], *([] if p["enabled"] else ["proxy disabled"])])
            for p in replica["proxies"]
            if p["toxics"] or not p["enabled"]
        ]
        table.add_row(
            replica["name"],
            _n(replica["calls_per_s"]),
            f"{replica['error_rate']:.0%}",
            _ejection_text(replica),
            "\n".join(faults) or "-",
        )
    return table


def _limit(server: dict[str, Any]) -> str:
    limit = server["concurrency_limit"]
    return "-" if limit is None else ("none" if limit == 0 else f"{limit:.0f}")


def server_table(snapshot: dict[str, Any]) -> Table:
    """Each service's admission: calls in flight against its concurrency limit, refusals."""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for name, justify in (
        ("service", "left"),
        ("in flight", "right"),
        ("limit", "right"),
        ("shed/s", "right"),
        ("pool", "right"),
        ("shed by reason", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=name == "service")  # type: ignore[arg-type]
    for server in snapshot.get("servers", []):
        reasons = ", ".join(
            f"{reason} {rate:.1f}"
            for reason, rate in sorted(server["shed_by_reason"].items())
            if rate > 0
        )
        pool = (
            "-"
            if server["pool_in_use"] is None or server["pool_queued"] is None
            else f"{server['pool_in_use']:.0f}+{server['pool_queued']:.0f}q"
        )
        table.add_row(
            server["name"],
            _n(server["in_flight"], 0),
            _limit(server),
            _n(server["shed_per_s"]),
            pool,
            reasons or "-",
        )
    return table


def edge_view(snapshot: dict[str, Any], title: str) -> Group:
    """The edges' traffic, their protections, the faults (`faults: none` when there are none),
    each replica (served, ejection, faults on its proxies), then each service's admission (in
    flight, concurrency limit, refusals)."""
    lines = fault_lines(snapshot) or ["none"]
    return Group(
        edge_table(snapshot, title),
        protection_table(snapshot),
        "faults: " + lines[0],
        *lines[1:],
        replica_table(snapshot),
        server_table(snapshot),
    )


def csds_lines(dumps: dict[str, dict[str, Any]] | None) -> list[str]:
    """Under `mesh up --xds`: one line per xDS client, what it holds over CSDS."""
    if dumps is None:
        return []
    from grpc_resilience_mesh.console.csds import summary_line

    lines = ["xDS clients (CSDS):"]
    for client, found in dumps.items():
        if "error" in found:
            lines.append(f"  [yellow]{client}: {found['error']}[/yellow]")
        else:
            lines.append("  " + summary_line(client, found))
    return lines


def snapshot_over(view: MeshView, window_s: float) -> dict[str, Any]:
    """Two scrapes `window_s` apart, so rates are per second over that window."""
    view.metrics.refresh()
    time.sleep(window_s)
    return view.snapshot()


def status(
    state_dir: StateDirOpt = None,
    window: Annotated[
        float,
        typer.Option(
            min=0.2,
            max=30.0,
            help="Seconds over which rates are measured (the console's: the last "
            f"{CONSOLE_WINDOW_S:g} s; --window {CONSOLE_WINDOW_S:g} to compare the two).",
        ),
    ] = 1.0,
    json_path: JsonOpt = None,
) -> None:
    """Breakers (per method), bulkheads, retry budgets and faults of every edge, now.

    Written to a file, the snapshot is all there is: the terminal gets one line saying where
    (the tables would only repeat it). Written to stdout, the tables go to stderr."""
    state = running_state(state_dir, "mesh status")
    view = MeshView(state, window_s=window + 1.0)
    try:
        with human_output_to_stderr(json_path, console):
            snap = snapshot_over(view, window)
            if json_path is None or to_stdout(json_path):
                _print_snapshot(snap, window)
        if json_path is not None:
            write_json(json_path, snap)
        if json_path is not None and not to_stdout(json_path):
            notes.print(
                f"mesh status: wrote {json_path} (policy {snap['policy']}; "
                f"{len(snap['edges'])} edges; rates per second over {window:g}s)",
                soft_wrap=True,
                highlight=False,
            )
    finally:
        view.close()


def _print_snapshot(snap: dict[str, Any], window: float) -> None:
    title = (
        f"mesh status (policy {snap['policy']}; per second over {window:g}s, "
        f"the console's {CONSOLE_WINDOW_S:g}s; ms)"
    )
    console.print(edge_view(snap, title), soft_wrap=False)
    for line in csds_lines(snap.get("csds")):
        console.print(line, soft_wrap=True, highlight=False)
    for error in snap["errors"]:
        console.print(f"[yellow]{error}[/yellow]", soft_wrap=True)
    if snap["experiment"]:
        e = snap["experiment"]
        console.print(
            f"experiment {e.get('experiment')}: {e.get('variant')} {e.get('phase')} "
            f"{e.get('done')}/{e.get('total')}"
        )
