"""`mesh fault add|rm|list|reset`: toxics by edge name (arguments as toxiproxy-cli's `toxic`
commands: -t TYPE -a KEY=VALUE -n NAME --tox F --upstream/--downstream), app faults by --service and
--method through FaultAdmin, and (`--xds`, under `mesh up --xds`) gRFC A33 delays and aborts through
the xDS control plane (grpc_resilience_mesh/cli/fault_xds.py). Toxics it adds are named `cli_...`,
so the console and `mesh status` say they came from `mesh fault`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from grpc_resilience_mesh.cli import fault_xds
from grpc_resilience_mesh.cli.fault_input import FaultInputError, ToxicRequest, toxic_request
from grpc_resilience_mesh.cli.fault_output import (
    app_faults_table,
    processes_note,
    toxic_added,
    toxic_removed,
    toxics_table,
    xds_faults_table,
)
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr, write_json
from grpc_resilience_mesh.cli.status import StateDirOpt, console, running_state
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.faults import FaultControl, FaultError
from grpc_resilience_mesh.launch.xds_faults import XdsFaultError
from grpc_resilience_mesh.services.topology import replica_of

app = typer.Typer(
    help="Add, remove, list or reset faults on the running mesh.", no_args_is_help=True
)

EdgeArg = Annotated[
    str | None, typer.Argument(help="The edge (Toxiproxy proxy name), e.g. gateway_to_profile.")
]
ServiceOpt = Annotated[
    str | None, typer.Option("--service", help="App fault: the service, e.g. recommendation.")
]
MethodOpt = Annotated[
    str | None,
    typer.Option("--method", help="App or xDS fault: the method, e.g. Recommend, or *."),
]


def _control(state: MeshState) -> FaultControl:
    return FaultControl(
        state.toxiproxy,
        {name: addrs["admin"] for name, addrs in state.services.items()},
        Path(state.state_dir),
        admin_token=state.admin_token,
    )


def _fail(message: str) -> None:
    console.print(f"[red]mesh fault:[/red] {message}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _checked_toxic(edge: str | None, type_: str | None, pairs: list[str] | None) -> ToxicRequest:
    """The toxic asked for, every name checked before anything is contacted (else exit 2)."""
    if edge is None or type_ is None:
        _fail("a toxic takes EDGE and -t TYPE (or give --service and --method)")
    assert edge is not None and type_ is not None
    try:
        return toxic_request(edge, type_, pairs or [])
    except FaultInputError as err:
        _fail(str(err))
        raise


@app.command("add")
def add(
    edge: EdgeArg = None,
    type_: Annotated[
        str | None, typer.Option("--type", "-t", help="Toxic type: latency, timeout, ...")
    ] = None,
    attribute: Annotated[
        list[str] | None, typer.Option("--attribute", "-a", help="KEY=VALUE, repeatable.")
    ] = None,
    name: Annotated[str | None, typer.Option("--toxicName", "-n", help="Toxic name.")] = None,
    toxicity: Annotated[float, typer.Option("--toxicity", "--tox", min=0.0, max=1.0)] = 1.0,
    upstream: Annotated[bool, typer.Option("--upstream", "-u", help="Toxic upstream.")] = False,
    service: ServiceOpt = None,
    method: MethodOpt = None,
    rate: Annotated[float, typer.Option(min=0.0, max=1.0, help="App fault: error rate.")] = 1.0,
    code: Annotated[str, typer.Option(help="App fault: gRPC status code name.")] = "UNAVAILABLE",
    delay: Annotated[float, typer.Option(min=0.0, help="App fault: delay in seconds.")] = 0.0,
    pushback: Annotated[int, typer.Option(help="App fault: pushback ms (-1: none).")] = -1,
    xds: fault_xds.XdsOpt = False,
    delay_ms: fault_xds.DelayMsOpt = None,
    abort_code: fault_xds.AbortCodeOpt = None,
    percent: fault_xds.PercentOpt = 100.0,
    state_dir: StateDirOpt = None,
) -> None:
    """Add a toxic to EDGE (`mesh fault add gateway_to_profile -t latency -a latency=500`), an
    app fault (`mesh fault add --service recommendation --method Recommend --rate 1`), or an
    xDS fault (`mesh fault add --xds gateway_to_recommendation --abort-code UNAVAILABLE
    --percent 30`)."""
    if xds:
        wanted = fault_xds.checked(edge, method, delay_ms, abort_code, percent)
        fault_xds.add(running_state(state_dir, "mesh fault"), wanted)
        return
    asked = _checked_toxic(edge, type_, attribute) if service is None else None
    state = running_state(state_dir, "mesh fault")
    control = _control(state)
    try:
        if service is not None:
            if edge is not None or method is None:
                _fail("an app fault takes --service and --method, and no EDGE")
            assert method is not None
            f = control.set_app_fault(
                service, method, rate, code, delay, pushback, owner="mesh fault"
            )
            typer.echo(
                f"Set app fault on {service} {f.method}: {f.code} at rate {f.error_rate:g}"
                + (f", delay {f.delay_s:g}s" if f.delay_s else "")
                + processes_note(n for n in sorted(control.admin) if replica_of(n) == service)
            )
            return
        assert asked is not None
        stream = "upstream" if upstream else "downstream"
        toxic = control.add_toxic(
            asked.edge, asked.type, asked.attributes, stream, toxicity, name, "cli_"
        )
        typer.echo(toxic_added(toxic, asked.edge))
    except FaultError as err:
        _fail(str(err))
    finally:
        control.close()


@app.command("rm")
def rm(
    edge: EdgeArg = None,
    name: Annotated[str | None, typer.Option("--toxicName", "-n", help="Toxic name.")] = None,
    service: ServiceOpt = None,
    method: MethodOpt = None,
    xds: fault_xds.XdsOpt = False,
    state_dir: StateDirOpt = None,
) -> None:
    """Remove toxic NAME from EDGE (`mesh fault rm gateway_to_profile -n cli_latency_downstream`),
    a service's app fault (`--service recommendation --method Recommend`; no --method: all),
    or EDGE's xDS faults (`--xds gateway_to_recommendation [--method Recommend]`)."""
    state = running_state(state_dir, "mesh fault")
    if xds:
        if edge is None:
            _fail("an xDS fault is removed with --xds EDGE [--method M]")
        assert edge is not None
        fault_xds.remove(state, edge, method)
        return
    control = _control(state)
    try:
        if service is not None:
            control.clear_app_fault(service, method or "")
            typer.echo(f"Removed app fault{'' if method else 's'} on {service} {method or ''}")
            return
        if edge is None or name is None:
            _fail("a toxic is removed with EDGE and -n NAME (or give --service)")
        assert edge is not None and name is not None
        typer.echo(toxic_removed(name, edge, control.remove_toxic(edge, name)))
    except FaultError as err:
        _fail(str(err))
    finally:
        control.close()


@app.command("list")
def list_(state_dir: StateDirOpt = None, json_path: JsonOpt = None) -> None:
    """Every toxic (by edge), app fault (by service and method) and xDS fault (by edge and
    route), and who set it."""
    state = running_state(state_dir, "mesh fault")
    control = _control(state)
    plane = fault_xds.plane_of(state)
    try:
        with human_output_to_stderr(json_path, console):
            try:
                proxies = control.proxies() if control.client is not None else {}
                xds_faults = plane.faults() if plane is not None else []
            except (FaultError, XdsFaultError) as err:
                _fail(str(err))
            toxics = control.toxics(proxies)
            app_faults = control.app_faults()
            down = [name for name, p in sorted(proxies.items()) if not p.get("enabled", True)]
            console.print(toxics_table(toxics) if toxics else "no toxics")
            if down:
                console.print("disabled proxies: " + ", ".join(down))
            console.print(app_faults_table(app_faults) if app_faults else "no app faults")
            if plane is not None:
                console.print(xds_faults_table(xds_faults) if xds_faults else "no xDS faults")
        if json_path is not None:
            doc: dict[str, Any] = {
                "toxics": [t.__dict__ for t in toxics],
                "disabled_proxies": down,
                "app_faults": [f.__dict__ for f in app_faults],
                "xds_faults": None if plane is None else [asdict(f) for f in xds_faults],
            }
            write_json(json_path, doc)
    finally:
        control.close()


@app.command("reset")
def reset(state_dir: StateDirOpt = None) -> None:
    """Remove every toxic, app fault and xDS fault set at run time (the policy's own `xds.faults`
    stay) and enable every proxy (the console's reset, and the xDS faults)."""
    state = running_state(state_dir, "mesh fault")
    control = _control(state)
    plane = fault_xds.plane_of(state)
    try:
        missed = control.reset()
    finally:
        control.close()
    if plane is not None:
        try:
            plane.remove()
        except XdsFaultError as err:
            missed.append(str(err))
    if missed:
        _fail("reset, except: " + "; ".join(missed))
    typer.echo("Reset every toxic, proxy and app fault" + (" and xDS fault" if plane else ""))
