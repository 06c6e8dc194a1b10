"""A topology held up for another driver (`mesh topology up FILE`): its Toxiproxy with a proxy per
edge and its command services, wired as a run wires them, and a state file that says where
everything listens, until stopped.

Chaos Toolkit cannot start a topology's services (its activities are calls, not processes that
outlive one), so an exported topology experiment (chaos/export/topology.py) runs against a
topology held up this way: its activities (integrations/chaosmesh, chaosgrpcmesh.topology) read
the state file and act through the runner's own pieces (ProxySet, Injection, the any-method load).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from grpc_resilience_mesh.chaos.experiment.kind import is_topology_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.model import (
    Topology,
    load_topology,
    load_topology_experiment,
)
from grpc_resilience_mesh.chaos.topology.proxies import ProxySet
from grpc_resilience_mesh.chaos.topology.services import ServiceSet
from grpc_resilience_mesh.chaos.topology.wiring import Wiring, ports_needed, wire
from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.services import settings

DEFAULT_STATE = Path("var/topology.json")
"""Where `mesh topology up` describes what it holds up, unless told otherwise."""
STATE_VAR = settings.Var(
    "MESH_TOPOLOGY_STATE",
    settings.text,
    "",
    "the state file `mesh topology up` writes and an exported topology experiment reads"
    " (default var/topology.json)",
)


@dataclass(frozen=True)
class HeldState:
    """What a held topology's drivers need: the file, the Toxiproxy and every address."""

    topology: Path
    toxiproxy: str
    token: str | None
    embedded: bool
    wiring: Wiring
    pids: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "topology": str(self.topology),
            "toxiproxy": self.toxiproxy,
            "token": self.token,
            "embedded": self.embedded,
            "wiring": asdict(self.wiring),
            "pids": self.pids,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> HeldState:
        return cls(
            Path(raw["topology"]),
            raw["toxiproxy"],
            raw["token"],
            raw["embedded"],
            Wiring(**raw["wiring"]),
            dict(raw["pids"]),
        )


class NotHeld(RuntimeError):
    """No topology is held up where the state file was looked for; says what to run."""


def read_state(path: Path) -> HeldState:
    """The state `mesh topology up` wrote at `path`, else NotHeld naming the command."""
    try:
        return HeldState.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        raise NotHeld(
            f"no topology is up ({path} does not exist): run `mesh topology up FILE --state "
            f"{path}` first and keep it running"
        ) from None


def attach(state: HeldState) -> tuple[Topology, ProxySet]:
    """The held topology and its proxies, for faults on and off from another process."""
    topo = load_topology(state.topology)
    return topo, ProxySet.attached(topo, state.wiring, state.toxiproxy, state.token)


def topology_path(path: Path) -> Path:
    """The topology file itself, or the one a topology experiment names."""
    if is_topology_experiment(path):
        return load_topology_experiment(path).topology_path
    load_topology(path)
    return path.resolve()


class HeldTopology:
    """A context manager: everything up and the state written on entry; all of it stopped (by
    PID) and the state removed on exit, whatever happened in between."""

    def __init__(self, path: Path, state: Path) -> None:
        self.path = topology_path(path)
        self.topo = load_topology(self.path)
        self.state_path = state
        ports = free_ports(ports_needed(self.topo) + 1)
        logs = state.parent / f"{self.topo.name}-logs"
        self.wiring = wire(self.topo, ports[1:], logs)
        self.proxies = ProxySet(self.topo, self.wiring, logs, ports[0])
        self.services = ServiceSet(self.topo, self.path.parent, self.wiring, logs)

    def __enter__(self) -> HeldState:
        if self.state_path.exists():
            raise ExperimentError(
                f"{self.state_path}: a topology is up already (or one died and left it): stop "
                "it, or remove the file"
            )
        try:
            self.proxies.start()
            self.services.start()
        except BaseException:
            self._stop()
            raise
        state = HeldState(
            self.path,
            self.proxies.url,
            self.proxies.token,
            self.proxies.embedded,
            self.wiring,
            self.services.pids(),
        )
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps(state.to_json(), indent=2) + "\n")
        return state

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.state_path.unlink(missing_ok=True)
        self._stop()

    def _stop(self) -> None:
        self.services.stop()
        self.proxies.stop()
