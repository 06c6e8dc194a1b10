"""docker-compose.yml's networks: each container reaches only what topology.py says it calls.

A Docker network lets every container on it reach every port of the others, so which pairs of
containers can talk is which pairs share a network. These tests read the compose file (and
deploy/toxiproxy.json) alone: no engine. Inside a pair Toxiproxy goes further, listening on
each network by that network's alias of it, so its API and another caller's proxies stay off
a service's network.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.topology import (
    EDGES,
    INSTANCES,
    TOXIPROXY_API_PORT,
    edge_proxies,
    replicas,
)
from tests.unit.deploy.deploy_sources import load_compose, load_toxiproxy_json, read_dotenv

COMPOSE = load_compose()
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
NETWORKS: dict[str, dict[str, Any] | None] = COMPOSE["networks"]


def networks_of(name: str) -> dict[str, list[str]]:
    """Service `name`'s networks -> its aliases there (the list form has none)."""
    declared = SERVICES[name].get("networks")
    assert declared, f"{name}: no networks declared (it would land on the flat default)"
    if isinstance(declared, list):
        return {n: [] for n in declared}
    return {n: list((v or {}).get("aliases", [])) for n, v in declared.items()}


def members(network: str) -> set[str]:
    return {name for name in SERVICES if network in networks_of(name)}


def internal(network: str) -> bool:
    return bool((NETWORKS[network] or {}).get("internal"))


def toxiproxy_alias_network(host: str) -> str:
    """The network on which Toxiproxy answers to `host`."""
    (found,) = [n for n, aliases in networks_of("toxiproxy").items() if host in aliases]
    return found


def callers(service_name: str) -> set[str]:
    return {r.name for r in replicas(service_name)}


def expected_pairs() -> set[frozenset[str]]:
    """Every pair that must talk: each caller (every replica) with Toxiproxy, Toxiproxy with
    each callee (every replica), each mesh process with Jaeger; and the replicas of a caller,
    which share one network because they share their proxies (one per edge)."""
    pairs: set[frozenset[str]] = set()
    for e in EDGES:
        pairs |= {frozenset((c, "toxiproxy")) for c in callers(e.caller)}
        pairs |= {frozenset(("toxiproxy", p.upstream.name)) for p in edge_proxies(e)}
        pairs |= {frozenset(pair) for pair in combinations(sorted(callers(e.caller)), 2)}
    pairs |= {frozenset((s.name, "jaeger")) for s in INSTANCES}
    return pairs


def test_every_service_is_on_declared_networks_only() -> None:
    for name in SERVICES:
        assert set(networks_of(name)) <= set(NETWORKS), name
        assert "default" not in networks_of(name), name
    assert {n for name in SERVICES for n in networks_of(name)} == set(NETWORKS)


def test_the_containers_that_share_a_network_are_exactly_the_topologys_hops() -> None:
    shared = {frozenset(pair) for n in NETWORKS for pair in combinations(sorted(members(n)), 2)}
    expected = expected_pairs()
    assert shared - expected == set(), "pairs that can talk but call nothing of each other"
    assert expected - shared == set(), "hops of the topology with no network"


def test_every_edge_goes_through_its_own_proxy_on_the_callers_network() -> None:
    proxies = {p["name"]: p for p in load_toxiproxy_json()}
    for e in EDGES:
        for proxy in edge_proxies(e):
            host, port = proxies[proxy.name]["listen"].rsplit(":", 1)
            assert int(port) == proxy.port, proxy.name
            network = toxiproxy_alias_network(host)
            assert members(network) - {"toxiproxy"} == callers(e.caller), (proxy.name, network)
            upstream_host = proxies[proxy.name]["upstream"].rsplit(":", 1)[0]
            assert upstream_host == proxy.upstream.name, proxy.name
            assert set(networks_of("toxiproxy")) & set(networks_of(upstream_host)), proxy.name
        for caller in callers(e.caller):
            env = SERVICES[caller]["environment"]
            wired = [a.rsplit(":", 1) for a in env[e.addr_env].split(",")]
            assert wired == [["toxiproxy", str(p.port)] for p in edge_proxies(e)], caller


def test_the_toxiproxy_api_listens_only_on_a_network_of_its_own_published_on_loopback() -> None:
    toxiproxy = SERVICES["toxiproxy"]
    (host,) = [a.removeprefix("-host=") for a in toxiproxy["command"] if a.startswith("-host=")]
    assert f"-port={TOXIPROXY_API_PORT}" in toxiproxy["command"]
    network = toxiproxy_alias_network(host)
    assert members(network) == {"toxiproxy"}
    assert toxiproxy["environment"]["TOXIPROXY_URL"] == f"http://{host}:{TOXIPROXY_API_PORT}"
    port = read_dotenv()["TOXIPROXY_API_PORT"]
    assert toxiproxy["ports"] == [f"127.0.0.1:{port}:{TOXIPROXY_API_PORT}"]
    # Published ports land on the one network that gives a route: the API's. Every other
    # network Toxiproxy is on is internal, and so is every network a service shares with it.
    assert not internal(network)
    assert all(internal(n) for n in networks_of("toxiproxy") if n != network)


def test_only_published_containers_have_a_network_that_is_not_internal() -> None:
    """Each container that publishes a port has one network with a route, alone on it, and its
    name sorts first among the container's (older engines picked the first by name)."""
    for n in NETWORKS:
        if not internal(n):
            (alone,) = members(n)
            assert SERVICES[alone].get("ports"), f"{n}: not internal, and publishes nothing"
    for name, svc in SERVICES.items():
        if svc.get("ports"):
            routed = [n for n in networks_of(name) if not internal(n)]
            assert routed == [min(networks_of(name))], name


def test_redis_requires_the_password_its_two_clients_are_given() -> None:
    redis = SERVICES["redis"]
    command = redis["command"]
    password = command[command.index("--requirepass") + 1]
    assert password and password == read_dotenv()["REDIS_PASSWORD"]
    assert redis["environment"]["REDISCLI_AUTH"] == password  # the health check's redis-cli
    for client in ("payment", "notification"):
        env = SERVICES[client]["environment"]
        assert env["REDIS_PASSWORD"] == password, client
    env = SERVICES["notification"]["environment"]
    config = NotificationConfig.from_env(ServiceConfig.from_env("notification", env), env)
    assert config.redis_password == password
    assert members("proxied-redis") == {"redis", "toxiproxy"}
