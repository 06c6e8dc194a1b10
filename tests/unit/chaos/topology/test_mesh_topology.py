"""The built-in mesh as a topology file (grpc_resilience_mesh/chaos/topologies/mesh.yaml) is the
mesh grpc_resilience_mesh.services.topology declares: the same services started by the same
modules, the same edges, and every address each service reads is one the run picked for it."""

from __future__ import annotations

from pathlib import Path

import grpc_resilience_mesh.chaos
from grpc_resilience_mesh.chaos.topology.model import CLIENT, Topology, load_topology
from grpc_resilience_mesh.chaos.topology.wiring import Wiring, ports_needed, wire
from grpc_resilience_mesh.services.payment.servicer import ledger_path
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.telemetry.tracing.setup import TRACES_DIR
from grpc_resilience_mesh.services.topology import EDGES, SERVICES

TOPOLOGIES = Path(grpc_resilience_mesh.chaos.__file__).parent / "topologies"
LEFT_OUT = {"notification"}
"""A BullMQ worker: it needs the Redis queue and an SMTP server (the file says so)."""


def mesh() -> Topology:
    return load_topology(TOPOLOGIES / "mesh.yaml")


def wired(topo: Topology, run_dir: Path) -> Wiring:
    return wire(topo, list(range(21_000, 21_000 + ports_needed(topo))), run_dir)


def test_the_file_starts_every_grpc_service_of_the_mesh_by_its_module() -> None:
    started = {name: spec.command for name, spec in mesh().services.items()}
    assert started == {
        s.name: ["python", "-m", s.module] for s in SERVICES if s.name not in LEFT_OUT
    }


def test_the_file_has_the_meshs_edges_between_them_and_the_client_calls_the_gateway() -> None:
    topo = mesh()
    kept = set(topo.services)
    declared = [e for e in EDGES if {e.caller, e.dependency} <= kept]
    expected = {(e.caller, e.dependency) for e in declared} | {(CLIENT, "gateway")}
    assert {(e.from_, e.to) for e in topo.edges} == expected
    named = {e.name: e.env_name for e in topo.edges if e.from_ != CLIENT}
    assert named == {e.name: e.addr_env for e in declared}


def test_every_address_a_service_reads_is_one_the_run_picked(tmp_path: Path) -> None:
    """No service falls back to a default port, which a `mesh up` on the machine may hold."""
    topo = mesh()
    wiring = wired(topo, tmp_path)
    picked = {*wiring.listen.values(), *wiring.proxies.values()}
    picked |= {a for ports in wiring.ports.values() for a in ports.values()}
    bound: list[str] = []
    called: list[str] = []
    for name in topo.services:
        config = ServiceConfig.from_env(name, wiring.env(topo, name))
        assert config.listen_addr == wiring.listen[name]
        for edge in topo.edges:
            if edge.from_ == name:
                assert config.dependencies[edge.to] == wiring.proxies[edge.name]
        bound += [config.listen_addr, config.admin_addr, config.metrics_addr]
        called += config.dependencies.values()
    assert set(bound) | set(called) <= picked
    assert len(set(bound)) == len(bound) == 3 * len(topo.services)


def test_what_the_services_write_goes_to_the_runs_directory(tmp_path: Path) -> None:
    topo = mesh()
    wiring = wired(topo, tmp_path / "run")
    for name in topo.services:
        traces = Path(TRACES_DIR.read(wiring.env(topo, name)))
        assert traces == tmp_path / "run" / "traces", name
    assert ledger_path(wiring.env(topo, "payment")).is_relative_to(tmp_path / "run")
