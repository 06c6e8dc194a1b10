"""docker-compose.yml: which of a mesh service's ports each other container can reach. A Compose
container is on several networks and 0.0.0.0 listens on all of them, so Jaeger, which shares a
traces network with every service, reached each one's gRPC and metrics ports (14 ports). Now a
service listens by an alias that exists on one network only, the one its callers come from, or
on loopback; its metrics and admin ports on loopback. The compose file alone: no engine."""

from __future__ import annotations

from grpc_resilience_mesh.services.topology import EDGES, INSTANCES, replica_of
from tests.unit.deploy.deploy_sources import load_toxiproxy_json
from tests.unit.deploy.test_deploy_compose_networks import (
    SERVICES,
    internal,
    members,
    networks_of,
)

PORT_VARS = ("LISTEN_ADDR", "METRICS_ADDR", "ADMIN_ADDR")
LOOPBACK = "127.0.0.1"


def listens_on(container: str, var: str) -> set[str]:
    """The networks on which `container`'s `var` port can be reached from another container."""
    host = SERVICES[container]["environment"][var].rpartition(":")[0].strip("[]")
    if host == LOOPBACK:
        return set()
    if host in ("0.0.0.0", "::", ""):
        return set(networks_of(container))
    return {n for n, aliases in networks_of(container).items() if host in aliases}


def reachable_from(container: str) -> list[str]:
    """Every mesh port another container listens on where `container` reaches it."""
    mine = set(networks_of(container))
    return sorted(
        f"{s.name} {var}"
        for s in INSTANCES
        if s.name != container
        for var in PORT_VARS
        if listens_on(s.name, var) & mine
    )


def called(name: str) -> bool:
    return name == "gateway" or any(e.dependency == replica_of(name) for e in EDGES)


def test_no_mesh_port_listens_on_every_network() -> None:
    for s in INSTANCES:
        for var in PORT_VARS:
            host = SERVICES[s.name]["environment"][var].rpartition(":")[0]
            assert host not in ("0.0.0.0", "[::]", ""), (s.name, var)


def test_jaeger_reaches_no_port_of_the_services_that_send_it_spans() -> None:
    assert {m for n in networks_of("jaeger") for m in members(n)} - {"jaeger"} == {
        s.name for s in INSTANCES
    }
    assert reachable_from("jaeger") == []


def test_toxiproxy_reaches_exactly_the_grpc_ports_it_proxies_to() -> None:
    upstreams = {p["upstream"].rpartition(":")[0] for p in load_toxiproxy_json()}
    mesh = {s.name for s in INSTANCES}
    proxied = sorted(f"{name} LISTEN_ADDR" for name in upstreams & mesh)
    assert reachable_from("toxiproxy") == proxied
    assert proxied, "Toxiproxy proxies to no mesh service"


def test_each_service_listens_on_one_network_its_callers_come_from_or_on_loopback() -> None:
    for s in INSTANCES:
        networks = listens_on(s.name, "LISTEN_ADDR")
        assert listens_on(s.name, "METRICS_ADDR") == set(), s.name
        assert listens_on(s.name, "ADMIN_ADDR") == set(), s.name
        if not called(s.name):
            assert networks == set(), f"{s.name}: nothing calls it, yet it listens"
            continue
        (network,) = networks
        host = SERVICES[s.name]["environment"]["LISTEN_ADDR"].rpartition(":")[0]
        others = [c for c in SERVICES if c != s.name and host in str(SERVICES[c].get("networks"))]
        assert others == [], f"{s.name}: its alias {host} is also {others}'s"
        if s.name == "gateway":  # its callers come through the published port
            assert not internal(network) and members(network) == {"gateway"}
        else:  # Toxiproxy dials it there
            assert "toxiproxy" in members(network), s.name
