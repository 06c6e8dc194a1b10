"""Activities for a topology experiment (`mesh chaos export FILE` of one): its load, its faults
on and every fault off, against a topology `mesh topology up FILE` holds up.

They act through the runner's own pieces, not copies: the load is the runner's (the method
resolved and the requests rendered by chaos/topology/phases.py, run under the guard and the
lever as `mesh chaos run` runs it), the faults go in through its Injection on a ProxySet
attached to the held Toxiproxy, under its FaultLease (the embedded Toxiproxy drops them if this
`chaos run` dies), and come off through the same. Every provider finds the held topology in the
configuration's `topology_state` (the state file `mesh topology up` writes), else
var/topology.json.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed, InterruptExecution

from chaosgrpcmesh.mesh import MEASURED, STARTED, run
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.app_faults import AppFaultError, clear_faults
from grpc_resilience_mesh.chaos.topology.experiment_model import FaultSpec
from grpc_resilience_mesh.chaos.topology.held import (
    DEFAULT_STATE,
    HeldState,
    NotHeld,
    attach,
    read_state,
)
from grpc_resilience_mesh.chaos.topology.injection import Injection
from grpc_resilience_mesh.chaos.topology.lease import FaultLease, LeaseError
from grpc_resilience_mesh.chaos.topology.lever import LeverPulled, refuse_if_pulled
from grpc_resilience_mesh.chaos.topology.model import LoadedExperiment, load_topology_experiment
from grpc_resilience_mesh.chaos.topology.phases import (
    Prepared,
    Watched,
    prepare,
    shape,
    watched_load,
)
from grpc_resilience_mesh.chaos.topology.report import figures
from grpc_resilience_mesh.chaos.topology.run import new_run_id
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyError
from grpc_resilience_mesh.loadgen.any_method import LoadInputError

Configuration = dict[str, Any] | None

RUN_ID = new_run_id()
"""This `chaos run`'s id, sent as baggage on every load call as `mesh chaos run` sends its own."""
_HELD: dict[str, Any] = {}
"""The faults in force (`injection`) and their lease (`lease`), between the method's actions."""
_PREPARED: dict[str, Prepared] = {}


def held(configuration: Configuration) -> HeldState:
    """The topology `mesh topology up` holds, else ActivityFailed saying how to start one."""
    given = (configuration or {}).get("topology_state") or DEFAULT_STATE
    try:
        return read_state(Path(str(given)))
    except NotHeld as err:
        raise ActivityFailed(str(err)) from None


def _experiment(path: str, state: HeldState) -> LoadedExperiment:
    try:
        loaded = load_topology_experiment(Path(path))
    except ExperimentError as err:
        raise ActivityFailed(str(err)) from None
    if loaded.topology_path != state.topology.resolve():
        raise ActivityFailed(
            f"the topology up is {state.topology}, the experiment's is {loaded.topology_path}"
        )
    return loaded


def run_load(
    experiment: str, phase: str = "steady", configuration: Configuration = None
) -> dict[str, float]:
    """The experiment's load (its steady-state size for `steady`, else its full size) through
    the client's proxy, watched by its guard and the machine's lever; its figures (error_rate,
    p50_s, p99_s, goodput_per_s, code.<NAME>, ...). A guard's breach or the lever ends the run
    (InterruptExecution) once every fault in force is off."""
    state = held(configuration)
    loaded = _experiment(experiment, state)
    if phase != "steady":
        STARTED.add("method")
    watched = run(_load(loaded, state, phase))
    stopped = watched.breach or watched.lever
    if stopped is not None:
        remove_faults(configuration)
        kind = "aborted by guard" if watched.breach else "stopped by lever"
        raise InterruptExecution(f"{kind}: {stopped}; every fault removed")
    figs = figures(watched.records)
    if phase == "steady":
        phase = "steady_after" if STARTED else "steady_before"
    MEASURED[phase] = figs
    return figs


async def _prepared(loaded: LoadedExperiment, target: str) -> Prepared:
    """The method resolved and both loads' requests rendered once per `chaos run`, as the
    runner does once per run: every phase then sends the same rendered requests."""
    key = f"{loaded.path}|{target}"
    if key not in _PREPARED:
        exp = loaded.experiment
        try:
            _PREPARED[key] = await prepare(
                exp.load, target, exp.steady_state.requests, RUN_ID, loaded.path.parent
            )
        except LoadInputError as err:
            raise ActivityFailed(f"{loaded.path}: {err}") from None
    return _PREPARED[key]


async def _load(loaded: LoadedExperiment, state: HeldState, phase: str) -> Watched:
    exp = loaded.experiment
    requests = exp.steady_state.requests if phase == "steady" else exp.load.requests
    prepared = await _prepared(loaded, state.wiring.proxies[loaded.entry_name])
    injection: Injection | None = _HELD.get("injection")
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Task[float]] = []

    def on_stop() -> None:  # the faults come off while the load unwinds, as in a run
        if injection is not None:
            pending.append(loop.create_task(injection.rollback()))

    calls = prepared.steady_calls if phase == "steady" else prepared.calls
    watched = await watched_load(prepared, calls, shape(exp.load, requests), exp.guard, on_stop)
    await asyncio.gather(*pending, return_exceptions=True)
    return watched


def apply_faults(faults: list[dict[str, Any]], configuration: Configuration = None) -> list[str]:
    """The faults (as the experiment file writes them) on, under a lease; their labels. A fault
    that cannot go on, or a pulled lever, ends the run with every fault off."""
    state = held(configuration)
    topo, proxies = attach(state)
    try:
        refuse_if_pulled()
        specs = [FaultSpec.model_validate(f) for f in faults]
    except (LeverPulled, ValueError) as err:
        raise InterruptExecution(f"no fault applied: {err}") from None
    edges = [e.name for e in topo.edges]
    lease = FaultLease(state.toxiproxy, edges, token=state.token, embedded=state.embedded)
    injection = Injection(specs, proxies, state.wiring.admin)
    try:
        lease.__enter__()
        _HELD.update(lease=lease, injection=injection)
        run(injection.apply())
    except (LeaseError, ToxiproxyError, AppFaultError, KeyError) as err:
        remove_faults(configuration)
        raise InterruptExecution(f"not applied, run stopped: {err}") from None
    return [f.label for f in specs]


def remove_faults(configuration: Configuration = None) -> dict[str, list[str]]:
    """Every fault off: the ones this run put on (through their Injection), then any toxic
    still listed on the held proxies and every app fault; the lease released. The toxics listed
    after, by edge (every list empty), else ActivityFailed naming what stayed."""
    state = held(configuration)
    injection: Injection | None = _HELD.pop("injection", None)
    failures: list[str] = []
    if injection is not None:
        run(injection.rollback())
        failures += injection.failures
    _, proxies = attach(state)
    proxies.applied = [(e, t) for e, names in proxies.toxics_listed().items() for t in names]
    failures += proxies.remove_all()
    for service, addr in state.wiring.admin.items():
        try:
            run(clear_faults(addr))
        except AppFaultError as err:
            failures.append(f"{service}: {err}")
    lease: FaultLease | None = _HELD.pop("lease", None)
    if lease is not None:
        lease.release()
    left = proxies.toxics_listed()
    if failures or any(left.values()):
        raise ActivityFailed(f"faults not removed: {'; '.join(failures)} (listed: {left})")
    return left
