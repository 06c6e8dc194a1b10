"""Where everything of a topology listens during a run, and what each started service is told.

Pure: the ports come in from the caller (launch.ports.free_ports, all picked at once, so no two
are the same), and the result is data that services.py and proxies.py act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpc_resilience_mesh.chaos.topology.model import CLIENT, Topology

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Wiring:
    """Each service's address, each fault admin's, and each edge proxy's listen address."""

    listen: dict[str, str]
    admin: dict[str, str]
    proxies: dict[str, str]
    upstreams: dict[str, str]

    def env(self, topo: Topology, service: str) -> dict[str, str]:
        """LISTEN_ADDR, FAULT_ADMIN_ADDR if any, and per outgoing edge the proxy's address."""
        env = {**topo.services[service].env, "LISTEN_ADDR": self.listen[service]}
        if service in self.admin:
            env["FAULT_ADMIN_ADDR"] = self.admin[service]
        for edge in topo.edges:
            if edge.from_ == service:
                env[edge.env_name] = self.proxies[edge.name]
        return env

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
        len(started) + sum(s.fault_admin for s in started) + sum(not e.listen for e in topo.edges)
    )


def wire(topo: Topology, ports: list[int]) -> Wiring:
    """The run's addresses from `ports` (ports_needed(topo) of them, distinct and free)."""
    if len(ports) != ports_needed(topo):
        raise ValueError(f"wire: {len(ports)} ports for {ports_needed(topo)}")
    free = iter(ports)
    listen: dict[str, str] = {}
    admin: dict[str, str] = {}
    for name, spec in topo.services.items():
        listen[name] = spec.address or f"{LOOPBACK}:{next(free)}"
        if spec.fault_admin:
            admin[name] = f"{LOOPBACK}:{next(free)}"
    proxies = {e.name: e.listen or f"{LOOPBACK}:{next(free)}" for e in topo.edges}
    upstreams = {e.name: listen[e.to] for e in topo.edges}
    return Wiring(listen, admin, proxies, upstreams)
