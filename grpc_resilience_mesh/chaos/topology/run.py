"""`mesh chaos run` for a topology experiment: start, check, inject, watch, roll back, judge.

    refuse if the lever is pulled -> Toxiproxy + a proxy per edge -> the command services
    (ready, or the run is refused naming the timeout) -> the method resolved and every
    request rendered (bad input: nothing injected) -> [dry run: the steady-state load judged
    by the guard, then stop] -> steady state -> lease + faults -> load under the guard and
    the lever -> rollback (always) -> verdict -> reports/<run_id>/{result.json,report.md}

Exit codes: 0 held, 1 not held, 2 bad input (nothing injected), 3 aborted by guard, 4 stopped
by lever. Every process the run started is stopped by its PID on every path.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.chaos.topology.app_faults import AppFaultError, check_rules
from grpc_resilience_mesh.chaos.topology.lever import refuse_if_pulled
from grpc_resilience_mesh.chaos.topology.live import dry, live
from grpc_resilience_mesh.chaos.topology.model import LoadedExperiment, load_topology_experiment
from grpc_resilience_mesh.chaos.topology.phases import prepare
from grpc_resilience_mesh.chaos.topology.proxies import ProxyError, ProxySet
from grpc_resilience_mesh.chaos.topology.report import write_report
from grpc_resilience_mesh.chaos.topology.services import ServiceNotReady, ServiceSet
from grpc_resilience_mesh.chaos.topology.wiring import Wiring, ports_needed, wire
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyError
from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.loadgen.any_method import LoadInputError


class TopologyRefused(RuntimeError):
    """Bad input found before any fault went in (exit 2): the message says what and where."""


@dataclass(frozen=True)
class TopologyOutcome:
    """What a run decided, and where its report is."""

    run_id: str
    verdict: str
    exit_code: int
    report: Path
    result: dict[str, Any]


def new_run_id(now: float | None = None) -> str:
    """`<utc yyyymmddThhmmss>-<6 hex>`: sortable, and unique between runs in one second."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}-{secrets.token_hex(3)}"


def run_topology_experiment(
    path: Path,
    *,
    dry_run: bool = False,
    reports: Path = Path("reports"),
    view: Callable[[str], None] = print,
) -> TopologyOutcome:
    """Run one topology experiment file; ExperimentError or TopologyRefused on bad input."""
    loaded = load_topology_experiment(path)
    refuse_if_pulled()
    run_id = new_run_id()
    run_dir = reports / run_id
    ports = free_ports(ports_needed(loaded.topology) + 1)
    wiring = wire(loaded.topology, ports[1:], run_dir)
    return asyncio.run(_run(loaded, wiring, ports[0], run_id, run_dir, dry_run, view))


async def _run(
    loaded: LoadedExperiment,
    wiring: Wiring,
    api_port: int,
    run_id: str,
    run_dir: Path,
    dry_run: bool,
    view: Callable[[str], None],
) -> TopologyOutcome:
    topo, exp = loaded.topology, loaded.experiment
    proxies = ProxySet(topo, wiring, run_dir / "logs", api_port)
    services = ServiceSet(topo, loaded.topology_path.parent, wiring, run_dir / "logs")
    view(f"run {run_id}: {exp.title}")
    try:
        await asyncio.to_thread(proxies.start)
        view(f"toxiproxy {proxies.url}: {len(topo.edges)} proxies")
        await asyncio.to_thread(services.start)
        view(f"services ready: {', '.join(topo.services)}")
        check_rules([f.app.model_dump() for f in exp.faults if f.app is not None])
        target = wiring.proxies[loaded.entry_name]
        prepared = await prepare(
            exp.load, target, exp.steady_state.requests, run_id, loaded.path.parent
        )
        view(f"{prepared.info.full_name} resolved at {target}; requests rendered")
        for note in wiring.notes(topo):
            view(note)
        phase = dry if dry_run else live
        result = await phase(loaded, wiring, proxies, prepared, view)
    except (ProxyError, ServiceNotReady, LoadInputError, AppFaultError, ToxiproxyError) as err:
        raise TopologyRefused(f"{loaded.path}: {err}") from None  # any fault already rolled back
    finally:
        await asyncio.to_thread(services.stop)
        await asyncio.to_thread(proxies.stop)
    result.update(
        run_id=run_id,
        title=exp.title,
        hypothesis=exp.hypothesis,
        experiment=str(loaded.path),
        topology=str(loaded.topology_path),
        notes=wiring.notes(topo),
        pids=services.pids(),
    )
    report = write_report(run_dir, result)
    return TopologyOutcome(run_id, result["verdict"], result["exit_code"], report, result)
