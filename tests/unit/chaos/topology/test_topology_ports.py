"""A started service's `ports` (variables the run fills with free loopback addresses) and the
`{run_dir}` placeholder in its `env`: what a service needs beyond LISTEN_ADDR and its callees,
e.g. the mesh's ADMIN_ADDR and METRICS_ADDR, and a place of its own for the files it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.model import Topology, load_topology
from grpc_resilience_mesh.chaos.topology.wiring import ports_needed, wire

PAIR = """
kind: topology
name: pair
services:
  front:
    command: [python, -m, front]
    ports: [ADMIN_ADDR, METRICS_ADDR]
    env: {STATE: "{run_dir}/front/state.db", MODE: fast}
  back: {command: [python, -m, back], ports: [ADMIN_ADDR]}
edges:
  - {from: client, to: front}
  - {from: front, to: back}
"""


def loaded(tmp_path: Path, text: str = PAIR) -> Topology:
    (tmp_path / "topology.yaml").write_text(text)
    return load_topology(tmp_path / "topology.yaml")


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ExperimentError) as caught:
        loaded(tmp_path, text)
    return str(caught.value)


def test_each_port_variable_gets_an_address_of_its_own(tmp_path: Path) -> None:
    topo = loaded(tmp_path)
    assert ports_needed(topo) == 7  # two services, three port variables, two proxies
    wiring = wire(topo, list(range(20_000, 20_007)), tmp_path / "run")
    front, back = wiring.env(topo, "front"), wiring.env(topo, "back")
    assert front["ADMIN_ADDR"] == wiring.ports["front"]["ADMIN_ADDR"]
    assert back["ADMIN_ADDR"] == wiring.ports["back"]["ADMIN_ADDR"]
    picked = [
        front["LISTEN_ADDR"],
        front["ADMIN_ADDR"],
        front["METRICS_ADDR"],
        back["LISTEN_ADDR"],
        back["ADMIN_ADDR"],
        front["BACK_ADDR"],
        wiring.proxies["client_to_front"],
    ]
    assert len(set(picked)) == 7
    assert all(a.startswith("127.0.0.1:") for a in picked)


def test_run_dir_in_an_env_value_is_the_runs_directory_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topo = loaded(tmp_path)
    monkeypatch.chdir(tmp_path)
    wiring = wire(topo, list(range(20_000, 20_007)), Path("reports/r1"))
    env = wiring.env(topo, "front")
    assert env["STATE"] == f"{tmp_path.resolve()}/reports/r1/front/state.db"
    assert env["MODE"] == "fast"
    unplaced = wire(topo, list(range(20_000, 20_007)))
    assert unplaced.env(topo, "back")["ADMIN_ADDR"] == unplaced.ports["back"]["ADMIN_ADDR"]
    with pytest.raises(ValueError, match="no run directory"):
        unplaced.env(topo, "front")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "ports: [ADMIN_ADDR]}",
            "ports: [ADMIN_ADDR, LISTEN_ADDR]}",
            "services.back.ports.1: LISTEN_ADDR is set by the runner",
        ),
        (
            "ports: [ADMIN_ADDR, METRICS_ADDR]",
            "ports: [ADMIN_ADDR, BACK_ADDR]",
            "services.front.ports.1: BACK_ADDR is set by the edge front_to_back",
        ),
        (
            "ports: [ADMIN_ADDR]}",
            "ports: [ADMIN_ADDR, ADMIN_ADDR]}",
            "services.back.ports.1: ADMIN_ADDR listed twice",
        ),
        (
            "ports: [ADMIN_ADDR, METRICS_ADDR]",
            "ports: [ADMIN_ADDR, MODE]",
            "services.front.ports.1: MODE is also in env",
        ),
        ("ports: [ADMIN_ADDR]}", "ports: [admin]}", "services.back.ports.0: String should match"),
        (
            "back: {command: [python, -m, back], ports: [ADMIN_ADDR]}",
            "back: {address: 127.0.0.1:50051, ports: [ADMIN_ADDR]}",
            "ports are for a service the runner starts",
        ),
    ],
)
def test_a_port_variable_set_twice_or_misnamed_is_refused(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    assert old in PAIR
    assert expected in error(tmp_path, PAIR.replace(old, new))
