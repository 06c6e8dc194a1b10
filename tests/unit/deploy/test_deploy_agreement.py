"""One topology everywhere: grpc_resilience_mesh/services/topology.py is the source of truth, and
.env, docker-compose.yml, deploy/toxiproxy.json, the k8s overlays and the embedded mesh's
default wiring (grpc_resilience_mesh.launch.wiring) all say the same names, ports and addresses."""

from __future__ import annotations

from typing import Any

import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.topology import (
    EDGES,
    INSTANCES,
    PEERS,
    PROXIES,
    SERVICES,
    TOXIPROXY_API_PORT,
    edge_proxies,
    edges_from,
    embedded_port,
    replica_of,
    service,
)
from tests.unit.deploy.deploy_sources import (
    JAEGER_HEALTH_PORT,
    JAEGER_OTLP_GRPC_PORT,
    JAEGER_UI_PORT,
    OVERLAYS,
    TOXIPROXY_JSON,
    env_list_to_dict,
    load_compose,
    load_toxiproxy_json,
    read_dotenv,
)
from tests.unit.deploy.kustomize import containers, render

ANY_ADDRESS = {"LISTEN_ADDR": "0.0.0.0", "METRICS_ADDR": "0.0.0.0"}
"""Kubernetes: a pod has one address; its NetworkPolicies pick who reaches which port."""


def compose_hosts(name: str) -> dict[str, str]:
    """Compose: a container is on several networks, so it listens by its alias on the one its
    callers come from (test_deploy_compose_listen.py checks which), or on loopback where
    nothing calls it; nothing in the stack reads metrics."""
    called = name == "gateway" or any(e.dependency == replica_of(name) for e in EDGES)
    return {"LISTEN_ADDR": f"{name}-listen" if called else "127.0.0.1", "METRICS_ADDR": "127.0.0.1"}


def expected_env(
    name: str, dependency_host: dict[str, str], hosts: dict[str, str] = ANY_ADDRESS
) -> dict[str, str]:
    """What every deployment gives service `name` (or replica, e.g. profile-2);
    dependency_host maps edge -> its address(es), hosts the listening hosts."""
    spec = service(name)
    base = replica_of(name)
    env = {
        "SERVICE": base,
        "OTEL_SERVICE_NAME": base,
        "LISTEN_ADDR": f"{hosts['LISTEN_ADDR']}:{spec.port}",
        "ADMIN_ADDR": f"127.0.0.1:{spec.admin_port}",
        "METRICS_ADDR": f"{hosts['METRICS_ADDR']}:{spec.metrics_port}",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://jaeger:{JAEGER_OTLP_GRPC_PORT}",
    }
    if base != name:
        env["MESH_REPLICA"] = name
    for e in edges_from(base):
        env[e.addr_env] = dependency_host[e.name]
    return env


VIA_TOXIPROXY = {e.name: f"toxiproxy:{e.proxy_port}" for e in EDGES}
"""Kubernetes: one proxy per edge, to the callee's headless Service."""
VIA_REPLICA_PROXIES = {
    e.name: ",".join(f"toxiproxy:{p.port}" for p in edge_proxies(e)) for e in EDGES
}
"""Compose: every replica behind its own proxy, the caller balancing over them."""
DIRECT = {e.name: f"{e.dependency}:{service(e.dependency).port}" for e in EDGES}


def assert_service_env(
    name: str, env: dict[str, str], wiring: dict[str, str], hosts: dict[str, str] = ANY_ADDRESS
) -> None:
    expected = expected_env(name, wiring, hosts)
    assert {k: env.get(k) for k in expected} == expected, name
    stray = {k for k in env if k.endswith("_ADDR")} - expected.keys()
    assert not stray, f"{name}: addresses for no edge of the topology: {stray}"
    base = replica_of(name)
    config = ServiceConfig.from_env(base, env)  # the service itself accepts this environment
    assert dict(config.dependencies) == {e.dependency: wiring[e.name] for e in edges_from(base)}


def test_toxiproxy_json_is_what_the_topology_implies() -> None:
    """Each proxy listens on Toxiproxy's alias on its caller's network (toxiproxy-<caller>,
    docker-compose.yml), so only that caller reaches it."""
    assert load_toxiproxy_json() == [
        {
            "name": p.name,
            "listen": f"toxiproxy-{e.caller}:{p.port}",
            "upstream": f"{p.upstream.name}:{p.upstream.port}",
            "enabled": True,
        }
        for e in EDGES
        for p in edge_proxies(e)
    ]
    assert [p["name"] for p in load_toxiproxy_json()] == [p.name for p in PROXIES]


def test_toxiproxy_json_has_the_embedded_defaults_names_and_ports() -> None:
    """The same proxies; upstreams on the container ports there, on those `mesh up` binds
    (embedded_port: below the ephemeral range) here."""
    embedded = Mesh(ports=Ports.default()).proxy_config()
    deployed = load_toxiproxy_json()

    def shape(proxies: list[dict[str, Any]], upstream_port: Any = int) -> list[tuple[Any, ...]]:
        return [
            (
                p["name"],
                int(p["listen"].rsplit(":", 1)[1]),
                upstream_port(int(p["upstream"].rsplit(":", 1)[1])),
                p["enabled"],
            )
            for p in proxies
        ]

    assert shape(deployed, embedded_port) == shape(embedded)


def test_k8s_chaos_config_map_is_deploy_toxiproxy_json_without_replica_proxies() -> None:
    copy = OVERLAYS["chaos"] / "toxiproxy.json"
    edges = {e.name for e in EDGES}
    per_edge = [
        {**p, "listen": "0.0.0.0:" + p["listen"].rsplit(":", 1)[1]}
        for p in load_toxiproxy_json()
        if p["name"] in edges
    ]
    assert load_toxiproxy_json(copy) == per_edge, (
        f"{copy}: {TOXIPROXY_JSON}'s proxies but the per-replica ones (<edge>-2), which "
        "name no Kubernetes Service (kustomize loads no file outside its folder), listening "
        "on 0.0.0.0 (a pod has one address; its NetworkPolicies pick who reaches which port)"
    )


def test_dotenv_ports_are_the_topologys() -> None:
    dotenv = read_dotenv()
    expected = {
        "GATEWAY_PORT": str(service("gateway").port),
        "TOXIPROXY_API_PORT": str(TOXIPROXY_API_PORT),
        "JAEGER_UI_PORT": str(JAEGER_UI_PORT),
        "JAEGER_OTLP_GRPC_PORT": str(JAEGER_OTLP_GRPC_PORT),
        "JAEGER_HEALTH_PORT": str(JAEGER_HEALTH_PORT),
        "MAILPIT_UI_PORT": "8025",
    }
    for peer in PEERS:
        expected[f"{peer.name.upper()}_PORT"] = str(peer.port)
    for spec in SERVICES:
        prefix = spec.name.upper()
        expected[f"{prefix}_GRPC_PORT"] = str(spec.port)
        expected[f"{prefix}_ADMIN_PORT"] = str(spec.admin_port)
        expected[f"{prefix}_METRICS_PORT"] = str(spec.metrics_port)
    for e in EDGES:
        expected[f"{e.name.upper()}_PROXY_PORT"] = str(e.proxy_port)
    ports = {k: v for k, v in dotenv.items() if k.endswith("_PORT")}
    assert ports == expected


def test_compose_wires_every_edge_through_toxiproxy() -> None:
    services = load_compose()["services"]
    assert set(services) == {s.name for s in (*INSTANCES, *PEERS)} | {"toxiproxy", "jaeger"}
    for spec in INSTANCES:
        env = services[spec.name]["environment"]
        assert_service_env(spec.name, env, VIA_REPLICA_PROXIES, compose_hosts(spec.name))


@pytest.mark.parametrize(("overlay", "wiring"), [("chaos", VIA_TOXIPROXY), ("direct", DIRECT)])
def test_k8s_overlays_wire_every_edge(overlay: str, wiring: dict[str, str]) -> None:
    objects = render(OVERLAYS[overlay])
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    for spec in SERVICES:
        (container,) = containers(deployments[spec.name])
        assert_service_env(spec.name, env_list_to_dict(container["env"]), wiring)


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_k8s_service_and_container_ports_are_the_topologys(overlay: str) -> None:
    objects = render(OVERLAYS[overlay])
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    for spec in SERVICES:
        ports = {p["name"]: p["port"] for p in services[spec.name]["spec"]["ports"]}
        assert ports == {"grpc": spec.port, "metrics": spec.metrics_port}
        (container,) = containers(deployments[spec.name])
        assert {p["containerPort"] for p in container["ports"]} == {spec.port, spec.metrics_port}
    jaeger = {p["name"]: p["port"] for p in services["jaeger"]["spec"]["ports"]}
    assert jaeger == {"otlp-grpc": JAEGER_OTLP_GRPC_PORT, "ui": JAEGER_UI_PORT}
    if overlay == "chaos":
        toxiproxy = {p["port"] for p in services["toxiproxy"]["spec"]["ports"]}
        assert toxiproxy == {TOXIPROXY_API_PORT} | {e.proxy_port for e in EDGES}
