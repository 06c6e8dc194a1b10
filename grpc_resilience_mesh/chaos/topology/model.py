"""The topology file (`kind: topology`) and the loaders of both files of this kind.

A topology names the user's services (a command the runner starts, or the address of one
already running), and the edges (caller -> callee) the runner puts a Toxiproxy proxy on. The
reserved caller `client` is the experiment's load generator. Every error names the file and
the key, with the close known name, as the catalogue's do (chaos/experiment/naming.py); the
experiment's own models are in experiment_model.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from grpc_resilience_mesh.chaos.experiment.kind import is_topology_file
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.chaos.topology.experiment_model import TopologyExperiment, fault_problems
from grpc_resilience_mesh.chaos.topology.schema import StrictModel, read_mapping, reason

CLIENT = "client"
"""The reserved caller: the experiment's load generator."""
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_ADDRESS = re.compile(r"[A-Za-z0-9.\-\[\]:]+:\d{1,5}")
_VARIABLE = r"^[A-Z_][A-Z0-9_]*$"
RUNNER_SET = ("LISTEN_ADDR", "FAULT_ADMIN_ADDR")
"""Variables the runner sets itself for every started service (FAULT_ADMIN_ADDR with
fault_admin: true)."""


def check_address(value: str) -> str:
    """`host:port`, else ValueError saying so."""
    if not _ADDRESS.fullmatch(value) or not 0 < int(value.rpartition(":")[2]) < 65536:
        raise ValueError(f"address {shown(value)}: expected host:port, e.g. 127.0.0.1:50051")
    return value


class ServiceSpec(StrictModel):
    """One service: `command` (argv, no shell) the runner starts, or `address` of one running."""

    command: list[str] | None = Field(default=None, min_length=1)
    address: str | None = None
    cwd: str | None = Field(default=None, description="relative to the topology file")
    env: dict[str, str] = {}
    ready_timeout_s: float = Field(default=15.0, gt=0, le=300)
    fault_admin: bool = False
    ports: list[Annotated[str, Field(pattern=_VARIABLE)]] = Field(
        default=[], description="variables the runner sets to a free loopback address each"
    )

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        return None if value is None else check_address(value)

    @model_validator(mode="after")
    def _one_way(self) -> ServiceSpec:
        if (self.command is None) == (self.address is None):
            raise ValueError("give exactly one of command (the runner starts it) or address")
        if self.address is not None and (self.cwd or self.env or self.fault_admin or self.ports):
            raise ValueError("cwd, env, fault_admin and ports are for a service the runner starts")
        return self


class EdgeSpec(StrictModel):
    """Caller -> callee; the runner puts a proxy on it named `<from>_to_<to>`."""

    from_: str = Field(alias="from")
    to: str
    listen: str | None = Field(default=None, description="fixed proxy listen address")
    env: str | None = Field(default=None, pattern=_VARIABLE)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str | None) -> str | None:
        return None if value is None else check_address(value)

    @property
    def name(self) -> str:
        return f"{self.from_}_to_{self.to}"

    @property
    def env_name(self) -> str:
        """The variable the caller reads the callee's address from (`<TO>_ADDR` by default)."""
        return self.env or f"{self.to.upper().replace('-', '_')}_ADDR"


class TracesSpec(StrictModel):
    """Where the services' traces can be opened, for the report's links."""

    jaeger_ui: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="e.g. http://127.0.0.1:16686; default MESH_JAEGER_UI",
    )


class Topology(StrictModel):
    """The services, and the edges a run puts proxies on."""

    kind: Literal["topology"]
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    toxiproxy: str = Field(default="embedded", pattern=r"^(embedded|https?://\S+)$")
    services: dict[str, ServiceSpec] = Field(min_length=1)
    edges: list[EdgeSpec] = Field(min_length=1)
    traces: TracesSpec = TracesSpec()

    def edge(self, name: str) -> EdgeSpec:
        return next(e for e in self.edges if e.name == name)


def topology_problems(topo: Topology) -> list[str]:
    """What the schema cannot see: names, edges to nowhere, duplicates, unwirable callers."""
    found = []
    known = list(topo.services)
    for name in topo.services:
        if name == CLIENT:
            found.append(f"services.{CLIENT}: reserved for the load generator; rename it")
        elif not _NAME.fullmatch(name):
            found.append(f"services.{shown(name)[1:-1]}: a name is [a-z][a-z0-9_-]*")
    seen: set[str] = set()
    for i, edge in enumerate(topo.edges):
        if edge.from_ != CLIENT and edge.from_ not in topo.services:
            found.append(_undeclared(f"edges.{i}.from", edge.from_, [CLIENT, *known]))
        if edge.to == CLIENT:
            found.append(f"edges.{i}.to: {CLIENT} is the load generator; nothing calls it")
        elif edge.to not in topo.services:
            found.append(_undeclared(f"edges.{i}.to", edge.to, known))
        if edge.name in seen:
            found.append(f"edges.{i}: duplicate edge {edge.from_} -> {edge.to}")
        seen.add(edge.name)
        caller = topo.services.get(edge.from_)
        if caller is not None and caller.address is not None and edge.listen is None:
            found.append(
                f"edges.{i}.listen: {edge.from_} runs already (address), so the runner cannot "
                f"rewire its calls: give a fixed listen address and point them at it"
            )
    return found + _port_problems(topo)


def _port_problems(topo: Topology) -> list[str]:
    """A `ports` variable set twice: listed twice, or also set by the runner or by an edge."""
    found = []
    for name, spec in topo.services.items():
        edges = {e.env_name: e.name for e in topo.edges if e.from_ == name}
        for i, var in enumerate(spec.ports):
            where = f"services.{name}.ports.{i}"
            if var in RUNNER_SET:
                found.append(f"{where}: {var} is set by the runner; leave it out")
            elif var in edges:
                found.append(f"{where}: {var} is set by the edge {edges[var]}; leave it out")
            elif var in spec.ports[:i]:
                found.append(f"{where}: {var} listed twice")
            elif var in spec.env:
                found.append(f"{where}: {var} is also in env; keep one")
    return found


def _undeclared(where: str, value: str, known: list[str]) -> str:
    return (
        f"{where}: undeclared service {shown(value)}{did_you_mean(value, known)} "
        f"(declared: {', '.join(known)})"
    )


def _validated(model: type[Any], raw: dict[str, Any], path: Path) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        reasons = [reason(e, model) for e in err.errors()]
        raise ExperimentError(f"{path}: {'; '.join(reasons)}") from None


def load_topology(path: Path) -> Topology:
    """The topology file validated, else ExperimentError with every problem found."""
    raw = read_mapping(path, "a topology")
    topo: Topology = _validated(Topology, raw, path)
    found = topology_problems(topo)
    if found:
        raise ExperimentError(f"{path}: {'; '.join(found)}")
    return topo


@dataclass(frozen=True)
class LoadedExperiment:
    """A topology experiment and the topology it names, both valid together."""

    path: Path
    experiment: TopologyExperiment
    topology_path: Path
    topology: Topology

    @property
    def entry(self) -> EdgeSpec:
        """The edge from the load generator into the service the load calls."""
        return next(e for e in self.topology.edges if e.name == self.entry_name)

    @property
    def entry_name(self) -> str:
        wanted = self.experiment.load.service
        names = [e.name for e in self.topology.edges if e.from_ == CLIENT]
        return f"{CLIENT}_to_{wanted}" if wanted else names[0]


def load_topology_experiment(path: Path) -> LoadedExperiment:
    """The experiment, its topology (relative to it), and their cross-checks, else
    ExperimentError naming the file and the key."""
    raw = read_mapping(path, "a topology experiment")
    exp: TopologyExperiment = _validated(TopologyExperiment, raw, path)
    topo_path = (path.parent / exp.topology).resolve()
    if not topo_path.is_file():
        raise ExperimentError(f"{path}: topology: no such file {shown(str(topo_path), 80)}")
    topo = load_topology(topo_path)
    found = _entry_problems(exp, topo) + fault_problems(
        exp, topo.services, [e.name for e in topo.edges]
    )
    if found:
        raise ExperimentError(f"{path}: {'; '.join(found)}")
    return LoadedExperiment(path, exp, topo_path, topo)


def _entry_problems(exp: TopologyExperiment, topo: Topology) -> list[str]:
    callees = [e.to for e in topo.edges if e.from_ == CLIENT]
    wanted = exp.load.service
    if not callees:
        return [f"topology: no edge from {CLIENT}: add {{from: {CLIENT}, to: <service>}}"]
    if wanted is None and len(callees) > 1:
        return [f"load.service: {CLIENT} calls {', '.join(callees)}; name which one to load"]
    if wanted is not None and wanted not in callees:
        return [
            f"load.service: no edge from {CLIENT} to {shown(wanted)}"
            f"{did_you_mean(wanted, callees)} (edges from {CLIENT}: {', '.join(callees)})"
        ]
    return []


def check_file(name: str) -> Path:
    """The file checked as what it is; ExperimentError with every problem found."""
    path = Path(name)
    if is_topology_file(path):
        load_topology(path)
    else:
        load_topology_experiment(path)
    return path
