"""Where everything of a topology listens during a run, and what each started service is told.

Pure: the ports come in from the caller (launch.ports.free_ports, all picked at once, so no two
are the same), and the result is data that services.py and proxies.py act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grpc_resilience_mesh.chaos.topology.model import CLIENT, Topology

LOOPBACK = "127.0.0.1"
RUN_DIR = "{run_dir}"
"""The one placeholder an `env` value may hold: the run's own directory (absolute), where its
report and logs go, so what a service writes stays with the run that wrote it."""


@dataclass(frozen=True)
class Wiring:
    """Each service's address, each fault admin's, and each edge proxy's listen address."""

    listen: dict[str, str]
    admin: dict[str, str]
    proxies: dict[str, str]
    upstreams: dict[str, str]
    ports: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per started service, each of its `ports` variables and the address picked for it."""
    run_dir: str | None = None
    """What {run_dir} stands for: the run's directory, absolute (a str: the wiring is JSON)."""

    def env(self, topo: Topology, service: str) -> dict[str, str]:
        """The service's `env` ({run_dir} filled in), LISTEN_ADDR, FAULT_ADMIN_ADDR if any,
        its `ports` variables, and per outgoing edge the proxy's address."""
        env = {k: self._filled(v) for k, v in topo.services[service].env.items()}
        env["LISTEN_ADDR"] = self.listen[service]
        if service in self.admin:
            env["FAULT_ADMIN_ADDR"] = self.admin[service]
        env.update(self.ports.get(service, {}))
        for edge in topo.edges:
            if edge.from_ == service:
                env[edge.env_name] = self.proxies[edge.name]
        return env

    def _filled(self, value: str) -> str:
        if RUN_DIR not in value:
            return value
        if self.run_dir is None:
            raise ValueError(f"wire: {RUN_DIR} in an env value, and no run directory given")
        return value.replace(RUN_DIR, self.run_dir)

    def notes(self, topo: Topology) -> list[str]:
        """What the user must point by hand: calls from services the runner did not start."""
        return [
            f"point {e.from_}'s calls to {e.to} at {self.proxies[e.name]}"
            for e in topo.edges
            if e.from_ != CLIENT and topo.services[e.from_].address is not None
        ]


def ports_needed(topo: Topology) -> int:
    started = [s for s in topo.services.values() if s.command is not None]
    return (
        len(started)
        + sum(s.fault_admin + len(s.ports) for s in started)
        + sum(not e.listen for e in topo.edges)
    )


def wire(topo: Topology, ports: list[int], run_dir: Path | None = None) -> Wiring:
    """The run's addresses from `ports` (ports_needed(topo) of them, distinct and free);
    `run_dir` (made absolute) is what {run_dir} in an env value stands for."""
    if len(ports) != ports_needed(topo):
        raise ValueError(f"wire: {len(ports)} ports for {ports_needed(topo)}")
    free = iter(ports)
    listen: dict[str, str] = {}
    admin: dict[str, str] = {}
    extra: dict[str, dict[str, str]] = {}
    for name, spec in topo.services.items():
        listen[name] = spec.address or f"{LOOPBACK}:{next(free)}"
        if spec.fault_admin:
            admin[name] = f"{LOOPBACK}:{next(free)}"
        if spec.ports:
            extra[name] = {var: f"{LOOPBACK}:{next(free)}" for var in spec.ports}
    proxies = {e.name: e.listen or f"{LOOPBACK}:{next(free)}" for e in topo.edges}
    upstreams = {e.name: listen[e.to] for e in topo.edges}
    absolute = str(run_dir.resolve()) if run_dir is not None else None
    return Wiring(listen, admin, proxies, upstreams, extra, absolute)
