"""`mesh up`: the mesh (and the embedded Toxiproxy) as local processes, supervised."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grpc_resilience_mesh.cli.suggest import mesh_command
from grpc_resilience_mesh.cli.toxiproxy import ServerChoice, choose_server
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.client.traces import JAEGER_UI
from grpc_resilience_mesh.console.server import ConsoleServer
from grpc_resilience_mesh.launch.control import ControlServer
from grpc_resilience_mesh.launch.fd_limit import raise_open_files_limit
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.otel_protos import otlp_refusal
from grpc_resilience_mesh.launch.ports import Ports, free_ports
from grpc_resilience_mesh.launch.private import private_umask
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.state_guard import StateDirInUse, StateDirRefused, open_private
from grpc_resilience_mesh.launch.supervisor import Supervisor, SupervisorEvent
from grpc_resilience_mesh.launch.trace_indexing import TraceIndexer
from grpc_resilience_mesh.launch.xds_plane import XdsPlane, missing_extra
from grpc_resilience_mesh.services import settings, topology
from grpc_resilience_mesh.services.runtime.logging import JsonFormatter

console = Console()
CONSOLE_PORT = 8480


def state_table(state: MeshState) -> Table:
    """Every process and its addresses, whole at 80 columns: metrics as host:port (each serves
    http://HOST:PORT/metrics), no column cut or wrapped."""
    table = Table(
        title=f"mesh is up (policy: {state.policy})",
        title_justify="left",
        caption="admin ports: loopback only; metrics: http://ADDR/metrics",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
    )
    for column in ("service", "gRPC", "admin", "metrics"):
        table.add_column(column, no_wrap=True)
    table.add_column("pid", justify="right", no_wrap=True)
    for name, addrs in state.services.items():
        metrics = addrs["metrics"].removeprefix("http://").removesuffix("/metrics")
        table.add_row(name, addrs["listen"], addrs["admin"], metrics, str(state.pids.get(name, "")))
    return table


def proxy_table(state: MeshState) -> Table:
    table = Table(
        title=f"edges (Toxiproxy API {state.toxiproxy or 'off: --direct'})", title_justify="left"
    )
    table.add_column("proxy / edge")
    table.add_column("caller connects to")
    table.add_column("upstream")
    for name, p in state.proxies.items():
        table.add_row(name, p["listen"], p["upstream"])
    return table


XdsOption = Annotated[
    bool,
    typer.Option(
        "--xds",
        help="The gateway's and recommendation's channels as xds:/// targets, configured by "
        "the mesh's control plane (mesh-xds; `make peers` builds it).",
    ),
]


def _xds_plane(state_dir: Path) -> XdsPlane:
    ads_port, admin_port = free_ports(2)
    return XdsPlane(state_dir.resolve(), ads_port, admin_port)


_DEFAULT_GATEWAY_PORT = topology.embedded_port(topology.GATEWAY.port)


def up(
    policy: Annotated[
        str, typer.Option(help="Preset (unprotected, retry-only, full) or YAML file.")
    ] = "full",
    direct: Annotated[bool, typer.Option("--direct", help="Skip the Toxiproxy proxies.")] = False,
    gateway_port: Annotated[
        int | None,
        typer.Option(
            help=f"Gateway port on 127.0.0.1 (default {_DEFAULT_GATEWAY_PORT}; not with "
            "--auto-ports)."
        ),
    ] = None,
    auto_ports: Annotated[
        bool, typer.Option("--auto-ports", help="Pick free ports for everything.")
    ] = False,
    state_dir: Annotated[Path, typer.Option(help="Ledger, logs, traces and mesh.json.")] = Path(
        "var"
    ),
    toxiproxy: ServerChoice = "embedded",
    console_port: Annotated[
        int,
        typer.Option(help="The console's port on 127.0.0.1 (0: any free one; busy: another)."),
    ] = CONSOLE_PORT,
    no_console: Annotated[
        bool, typer.Option("--no-console", help="Do not serve the console.")
    ] = False,
    xds: XdsOption = False,
) -> None:
    """Start the mesh on 127.0.0.1, wait until all of it is SERVING, stay in the foreground.

    A process that dies is restarted (same ports, same policy) after 0.5 s, doubling to 10 s
    while it keeps failing; `mesh restart SERVICE` restarts one. Ctrl-C, SIGTERM or SIGHUP stops
    every process cleanly. A --state-dir another mesh holds, or not yours alone, or a port it
    would bind that something else holds (each named): exit 2.
    """
    ports = _ports(gateway_port, auto_ports)
    raise_open_files_limit()  # before anything opens: the console's and children's headroom
    choose_server(toxiproxy, "mesh up", console)
    private_umask()  # every file under the state dir is the owner's alone (launch.private)
    plane = _plane_unless_refused(state_dir, xds)
    mesh = Mesh(state_dir=state_dir, ports=ports, direct=direct, policy=policy, xds=plane)
    _claim(mesh, ports, check_ports=not auto_ports, direct=direct)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # a closed terminal too
        signal.signal(sig, lambda *_: stop.set())
    control = ControlServer(mesh.state_dir)
    console_server: ConsoleServer | None = None
    try:
        mesh.control = str(control.open())
        state = _start(mesh)
        if not no_console:
            console_server = _console(state, 0 if auto_ports else console_port)
        _banner(mesh, state, state_dir, console_server)
        _supervise(mesh, stop, control)
    finally:
        stop.set()
        mesh.stop()  # on every other way out; a no-op after the stop in _supervise
        control.close()
        if console_server is not None:
            console_server.close()


def _plane_unless_refused(state_dir: Path, xds: bool) -> XdsPlane | None:
    """The control plane --xds asks for (None without); but exit 2, before anything starts,
    when this install cannot run what was asked: --xds without the [xds] extra, or OTLP export
    with opentelemetry-proto's files overwritten by that extra's xds-protos (each message
    names its remedy)."""
    missing = missing_extra() if xds else None
    why = f"--xds {missing}" if missing is not None else otlp_refusal(os.environ)
    if why is not None:
        console.print(f"[red]mesh up:[/red] {escape(why)}", soft_wrap=True, highlight=False)
        raise typer.Exit(2)
    return _xds_plane(state_dir) if xds else None


def _ports(gateway_port: int | None, auto_ports: bool) -> Ports:
    """Free ports (--auto-ports), or the topology's with --gateway-port; both: exit 2."""
    if auto_ports and gateway_port is not None:
        console.print(
            "[red]mesh up:[/red] --gateway-port and --auto-ports: --auto-ports picks every port "
            "(the gateway's too); give one or the other",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    return Ports.auto() if auto_ports else Ports.default(gateway_port)


_SHOWN_HELD = 5
"""Held ports named one by one; past that, a count (a second mesh finds every one held)."""


def _claim(mesh: Mesh, ports: Ports, check_ports: bool, direct: bool) -> None:
    """The state dir, then the ports it will bind: exit 2 when another mesh holds the one or
    anything else holds the other."""
    try:
        mesh.lock()
    except (StateDirInUse, StateDirRefused) as err:
        console.print(f"[red]mesh up:[/red] {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(2) from None
    if check_ports:
        _refuse_held(ports, direct)


def _refuse_held(ports: Ports, direct: bool) -> None:
    """Exit 2 before anything starts when a port the mesh would bind is taken, naming each and
    what would have bound it: a child's log saying `address already in use` named neither.
    Checked once the state dir is ours, so a second `mesh up` on it hears of that mesh instead."""
    held = ports.held(toxiproxy=not direct)
    if not held:
        return
    shown = [f"127.0.0.1:{port} ({name})" for port, name in sorted(held.items())]
    named = ", ".join(shown[:_SHOWN_HELD])
    if len(shown) > _SHOWN_HELD:
        named += f" and {len(shown) - _SHOWN_HELD} more (another mesh on the default ports?)"
    console.print(
        f"[red]mesh up:[/red] in use: {named}. Stop what holds "
        f"{'it' if len(held) == 1 else 'them'}, or run `mesh up --auto-ports` to pick free "
        "ports for everything (`mesh call`, `mesh status` and the rest read them from the "
        "state dir's mesh.json)",
        soft_wrap=True,
        highlight=False,
    )
    raise typer.Exit(2)


def _start(mesh: Mesh) -> MeshState:
    with console.status("starting the mesh..."):
        try:
            return mesh.start()
        except LaunchError as err:
            console.print(f"[red]mesh up failed:[/red] {err}")
            console.print("nothing was left running.")
            raise typer.Exit(1) from None


def _supervise(mesh: Mesh, stop: threading.Event, control: ControlServer) -> None:
    """Restart what dies until `stop`, then stop every process and say how each ended.
    Meanwhile the spans' index is kept current for `mesh traces ID` (in a thread of its own)."""
    supervisor = Supervisor(mesh, _reporter(mesh.state_dir / "logs" / "supervisor.log"))
    thread = threading.Thread(
        target=supervisor.run, args=(stop, control), name="supervisor", daemon=True
    )
    thread.start()
    indexer = TraceIndexer(mesh.state_dir / "traces").start()
    while not stop.wait(0.5):
        pass
    mesh.interrupt()  # a restart in progress gives up now
    thread.join()
    codes = mesh.stop()
    console.print("stopped: " + ", ".join(f"{k} ({v})" for k, v in codes.items()))
    indexer.finish()  # what the services wrote as they stopped


REPORTS_DIR = settings.Var(
    "MESH_REPORTS_DIR", settings.text, "reports", "where the console finds experiment reports"
)


def _console(state: MeshState, port: int) -> ConsoleServer:
    """The console on `port`, or on a free port when that one is taken."""
    jaeger = JAEGER_UI.read() or None
    reports = Path(REPORTS_DIR.read())
    try:
        return ConsoleServer(state, port, jaeger, reports).start()
    except OSError:
        return ConsoleServer(state, 0, jaeger, reports).start()


def _banner(
    mesh: Mesh, state: MeshState, state_dir: Path, console_server: ConsoleServer | None
) -> None:
    console.print(state_table(state))
    console.print(proxy_table(state))
    if console_server is not None:
        console.print(
            f"\nconsole: [bold]{console_server.token_url}[/bold]   (or: mesh status, mesh watch;"
            f" the token is also in {console_server.token.path})",
            soft_wrap=True,
            highlight=False,
        )
    console.print(
        f"\ntry:  [bold]{escape(mesh_command('call home --user u-0001', state_dir))}[/bold]   "
        f"(gateway {state.gateway}; state in {state_dir / 'mesh.json'})",
        soft_wrap=True,  # the command stays one line, to paste whole
    )
    if state.api_key:
        console.print(
            "\nthe gateway wants an API key (generated for this run unless MESH_API_KEYS is set):\n"
            f"  export MESH_API_KEY={state.api_key}   # `mesh call` also finds it in mesh.json\n"
            f"  grpcurl -plaintext -H 'authorization: Bearer {state.api_key}' "
            f'-d \'{{"user_id": "u-0001"}}\' {state.gateway} mesh.v1.Gateway/GetHome'
        )
    if state.admin_token:
        console.print(
            "admin ports and the Toxiproxy API want this run's admin token (admin_token in "
            "mesh.json; `mesh fault`, `mesh status` and `mesh chaos run` send it)",
            soft_wrap=True,
        )
    if mesh.tls_dir is not None:
        console.print(f"TLS between services: on (certificates in {mesh.tls_dir})")
    console.print(
        "A process that dies is restarted (logs/supervisor.log); "
        "`mesh restart SERVICE` restarts one. Ctrl-C stops everything."
    )


def _reporter(log_path: Path) -> Callable[[SupervisorEvent], None]:
    """Show each supervisor event on the console and append it to `log_path` (JSON lines)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = logging.getLogger("chaos.supervisor")
    log.propagate = False
    log.setLevel(logging.INFO)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    handler = logging.StreamHandler(os.fdopen(open_private(log_path, flags), "a"))
    handler.setFormatter(JsonFormatter("mesh-up"))
    log.addHandler(handler)
    styles = {"restarted": "green", "requested": "cyan"}

    def report(event: SupervisorEvent) -> None:
        style = styles.get(event.kind, "red")
        console.print(f"[{style}]{escape(event.message)}[/{style}]", soft_wrap=True)
        level = logging.INFO if event.kind in styles else logging.WARNING
        log.log(
            level,
            event.message,
            extra={"event": event.kind, "component": event.name, "pid": event.pid},
        )
        handler.flush()

    return report
