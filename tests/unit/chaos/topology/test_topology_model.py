"""The topology file and the topology experiment, refused field by field with the close known
name, before anything starts; and the wiring a run gives each started service."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.kind import is_topology_experiment, is_topology_file
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.model import load_topology, load_topology_experiment
from grpc_resilience_mesh.chaos.topology.wiring import ports_needed, wire
from grpc_resilience_mesh.cli.app import app

CHAIN = """
kind: topology
name: chain
services:
  front: {command: [python, -m, front]}
  middle: {command: [python, -m, middle], fault_admin: true}
  back: {address: 127.0.0.1:50051}
edges:
  - {from: client, to: front}
  - {from: front, to: middle}
  - {from: middle, to: back, env: BACKEND_TARGET}
"""

EXPERIMENT = """
title: slow middle
topology: topology.yaml
load: {method: chain.v1.Front/Get, request: {key: "k-{n}"}}
faults:
  - {edge: middle_to_back, toxic: latency, attributes: {latency: 300}}
  - {service: middle, app: {code: UNAVAILABLE, rate: 0.5}}
expectations:
  - {metric: code.UNAVAILABLE, max: 10}
"""


def write(tmp_path: Path, topology: str, experiment: str | None = None) -> Path:
    (tmp_path / "topology.yaml").write_text(topology)
    if experiment is None:
        return tmp_path / "topology.yaml"
    (tmp_path / "exp.yaml").write_text(experiment)
    return tmp_path / "exp.yaml"


def topology_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ExperimentError) as caught:
        load_topology(write(tmp_path, text))
    return str(caught.value)


def experiment_error(tmp_path: Path, experiment: str, topology: str = CHAIN) -> str:
    with pytest.raises(ExperimentError) as caught:
        load_topology_experiment(write(tmp_path, topology, experiment))
    return str(caught.value)


def test_a_good_pair_loads_and_each_kind_is_recognised(tmp_path: Path) -> None:
    loaded = load_topology_experiment(write(tmp_path, CHAIN, EXPERIMENT))
    assert loaded.entry_name == "client_to_front"
    assert loaded.experiment.load.method == "/chain.v1.Front/Get"
    assert [e.name for e in loaded.topology.edges][1:] == ["front_to_middle", "middle_to_back"]
    assert is_topology_experiment(tmp_path / "exp.yaml")
    assert not is_topology_file(tmp_path / "exp.yaml")
    assert is_topology_file(tmp_path / "topology.yaml")
    assert not is_topology_experiment(tmp_path / "topology.yaml")


def test_an_unknown_key_names_the_close_one(tmp_path: Path) -> None:
    error = topology_error(
        tmp_path, CHAIN.replace("{command: [python, -m, front]}", "{comand: [python, -m, front]}")
    )
    assert "services.front.comand: unknown key; did you mean 'command'?" in error


def test_an_edge_to_an_undeclared_service_is_refused_with_the_close_name(tmp_path: Path) -> None:
    error = topology_error(
        tmp_path, CHAIN.replace("{from: front, to: middle}", "{from: front, to: midle}")
    )
    assert "edges.1.to: undeclared service 'midle'; did you mean 'middle'?" in error
    assert "(declared: front, middle, back)" in error


@pytest.mark.parametrize(
    ("service", "why"),
    [
        ("{env: {A: b}}", "give exactly one of command"),
        ("{command: [x], address: 127.0.0.1:1}", "give exactly one of command"),
        ("{address: localhost}", "expected host:port"),
    ],
)
def test_a_service_needs_a_command_or_an_address(tmp_path: Path, service: str, why: str) -> None:
    error = topology_error(tmp_path, CHAIN.replace("{command: [python, -m, front]}", service))
    assert error.count("services.front") == 1 and why in error


def test_duplicates_the_reserved_client_and_an_unwirable_caller_are_refused(
    tmp_path: Path,
) -> None:
    text = CHAIN.replace(
        "  - {from: front, to: middle}\n",
        "  - {from: front, to: middle}\n  - {from: front, to: middle}\n"
        "  - {from: front, to: client}\n  - {from: back, to: front}\n",
    )
    text = text.replace("  back:", "  client: {address: 127.0.0.1:1}\n  back:")
    error = topology_error(tmp_path, text)
    assert "services.client: reserved for the load generator" in error
    assert "edges.2: duplicate edge front -> middle" in error
    assert "edges.3.to: client is the load generator" in error
    assert "edges.4.listen: back runs already" in error


def test_a_fault_on_an_unknown_edge_or_a_service_without_fault_admin(tmp_path: Path) -> None:
    exp = EXPERIMENT.replace("edge: middle_to_back", "edge: midle_to_back").replace(
        "service: middle", "service: front"
    )
    error = experiment_error(tmp_path, exp)
    assert "faults.0.edge: unknown edge 'midle_to_back'; did you mean 'middle_to_back'?" in error
    assert "faults.1.service: front has no fault_admin: true" in error


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("metric: code.UNAVAILABLE", "metric: code.UNAVAILBLE", "did you mean 'UNAVAILABLE'?"),
        ("metric: code.UNAVAILABLE", "metric: eror_rate", "did you mean 'error_rate'?"),
        ("toxic: latency", "toxic: latncy", "did you mean 'latency'?"),
        ("{latency: 300}", "{latncy: 300}", "did you mean 'latency'?"),
        ("method: chain.v1.Front/Get", "method: Get", "expected /package.Service/Method"),
        ("code: UNAVAILABLE", "code: UNAVAILABEL", "did you mean 'UNAVAILABLE'?"),
        ("topology: topology.yaml", "topology: nowhere.yaml", "topology: no such file"),
    ],
)
def test_experiment_fields_are_checked(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert expected in experiment_error(tmp_path, EXPERIMENT.replace(old, new))


def test_the_load_names_its_service_when_the_client_calls_several(tmp_path: Path) -> None:
    two = CHAIN.replace("  - {from: front, to: middle}", "  - {from: client, to: middle}")
    assert "load.service: client calls front, middle" in experiment_error(tmp_path, EXPERIMENT, two)
    wrong = EXPERIMENT.replace("load: {", "load: {service: back, ")
    assert "load.service: no edge from client to 'back'" in experiment_error(tmp_path, wrong, two)


def test_each_started_service_gets_its_address_and_its_callees_proxies(tmp_path: Path) -> None:
    topo = load_topology(write(tmp_path, CHAIN))
    count = ports_needed(topo)
    assert count == 6  # front, middle, middle's admin, three proxies
    wiring = wire(topo, list(range(20_000, 20_000 + count)))
    front, middle = wiring.env(topo, "front"), wiring.env(topo, "middle")
    assert front["LISTEN_ADDR"] == wiring.upstreams["client_to_front"]
    assert front["MIDDLE_ADDR"] == wiring.proxies["front_to_middle"]
    assert middle["BACKEND_TARGET"] == wiring.proxies["middle_to_back"]
    assert middle["FAULT_ADMIN_ADDR"] == wiring.admin["middle"]
    assert wiring.upstreams["middle_to_back"] == "127.0.0.1:50051"
    assert len(set(wiring.proxies.values()) | set(wiring.listen.values())) == 6


def test_a_service_already_running_is_pointed_at_by_hand(tmp_path: Path) -> None:
    text = CHAIN + "  - {from: back, to: front, listen: 127.0.0.1:26001}\n"
    topo = load_topology(write(tmp_path, text))
    wiring = wire(topo, list(range(20_000, 20_000 + ports_needed(topo))))
    assert wiring.notes(topo) == ["point back's calls to front at 127.0.0.1:26001"]


def test_mesh_chaos_validate_checks_both_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, CHAIN, EXPERIMENT)
    runner = CliRunner()
    ok = runner.invoke(app, ["chaos", "validate", str(path), str(tmp_path / "topology.yaml")])
    assert ok.exit_code == 0 and ok.output.count("OK") == 2, ok.output
    (tmp_path / "topology.yaml").write_text(CHAIN.replace("to: middle}", "to: midle}"))
    bad = runner.invoke(app, ["chaos", "validate", str(tmp_path / "topology.yaml")])
    assert bad.exit_code == 2 and "did you mean 'middle'?" in bad.output, bad.output
