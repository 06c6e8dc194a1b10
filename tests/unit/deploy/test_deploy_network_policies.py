"""deploy/k8s NetworkPolicies: everything denied, ingress and egress, but the call graph.

For each overlay, as `kubectl kustomize` renders it: for every pair of pods and every port and
protocol, the policies let a connection through exactly when it is an edge that
grpc_resilience_mesh/services/topology.py implies for that overlay (each caller to its callee, or to
its proxy on Toxiproxy and Toxiproxy on to the callee), or a mesh service's spans to Jaeger.
Besides: the pods that dial anything may ask kube-dns, the world may reach the gateway's gRPC port
and nothing else, and nothing leaves the namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from grpc_resilience_mesh.services.topology import EDGES, SERVICES, service
from tests.unit.deploy.deploy_sources import JAEGER_OTLP_GRPC_PORT, OVERLAYS
from tests.unit.deploy.kustomize import containers, render
from tests.unit.deploy.network_policy import Endpoint, NetworkPolicyError, PolicySet

Connection = tuple[str, str, int, str]
"""(source pod, target pod, port, protocol)."""
Check = Callable[[Endpoint, Endpoint, int, str], bool]

PROTOCOLS = ("TCP", "UDP")
KUBE_DNS = Endpoint(
    "kube-dns",
    "kube-system",
    {"k8s-app": "kube-dns"},
    {"dns": (53, "UDP"), "dns-tcp": (53, "TCP"), "metrics": (9153, "TCP")},
)
OUTSIDE = Endpoint("a client outside the cluster", None)
OTHER_NAMESPACE = Endpoint("a pod in another namespace", "default", {"app": "client"})
OTHER_KUBE_SYSTEM = Endpoint(
    "another kube-system pod", "kube-system", {"k8s-app": "metrics-server"}
)


def direct_edges() -> set[Connection]:
    return {(e.caller, e.dependency, service(e.dependency).port, "TCP") for e in EDGES}


def edges_via_toxiproxy() -> set[Connection]:
    to_proxy = {(e.caller, "toxiproxy", e.proxy_port, "TCP") for e in EDGES}
    to_callee = {("toxiproxy", e.dependency, service(e.dependency).port, "TCP") for e in EDGES}
    return to_proxy | to_callee


WIRING = {"direct": direct_edges, "chaos": edges_via_toxiproxy}


def call_graph(overlay: str) -> set[Connection]:
    traces = {(s.name, "jaeger", JAEGER_OTLP_GRPC_PORT, "TCP") for s in SERVICES}
    return WIRING[overlay]() | traces


def pods(objects: list[dict[str, Any]]) -> list[Endpoint]:
    """One pod per Deployment (replicas share its labels, so they fare alike)."""
    return [
        Endpoint(
            o["metadata"]["name"],
            o["metadata"]["namespace"],
            o["spec"]["template"]["metadata"]["labels"],
            {
                p["name"]: (p["containerPort"], p.get("protocol", "TCP"))
                for c in containers(o)
                for p in c.get("ports", [])
                if "name" in p
            },
        )
        for o in objects
        if o["kind"] == "Deployment"
    ]


def ports_to_try(objects: list[dict[str, Any]], overlay: str) -> set[int]:
    """Every port a pod declares, the call graph uses, or a policy names."""
    declared = {
        p["containerPort"]
        for o in objects
        if o["kind"] == "Deployment"
        for c in containers(o)
        for p in c.get("ports", [])
    }
    in_policies = {
        entry["port"]
        for o in objects
        if o["kind"] == "NetworkPolicy"
        for direction in ("ingress", "egress")
        for rule in o["spec"].get(direction) or []
        for entry in rule.get("ports") or []
        if isinstance(entry.get("port"), int)
    }
    return declared | in_policies | {c[2] for c in call_graph(overlay)}


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    overlay: str = request.param
    return overlay, render(OVERLAYS[overlay])


def test_every_overlay_has_its_wiring() -> None:
    assert set(WIRING) == set(OVERLAYS)


def connections(
    check: Check, sources: Iterable[Endpoint], targets: Iterable[Endpoint], ports: Iterable[int]
) -> set[Connection]:
    targets, ports = list(targets), sorted(ports)
    return {
        (source.name, target.name, port, protocol)
        for source in sources
        for target in targets
        for port in ports
        for protocol in PROTOCOLS
        if check(source, target, port, protocol)
    }


def test_pods_reach_each_other_exactly_along_the_call_graph(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    overlay, objects = rendered
    policies, everyone = PolicySet(objects), pods(objects)
    allowed = connections(policies.allows, everyone, everyone, ports_to_try(objects, overlay))
    expected = call_graph(overlay)
    assert {c[:2] for c in expected} <= {(s.name, t.name) for s in everyone for t in everyone}
    assert sorted(allowed - expected) == [], "open, but no edge of the topology"
    assert sorted(expected - allowed) == [], "edges of the topology the policies block"


def test_caller_and_callee_each_open_exactly_the_call_graph(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    """Both ends name every edge: neither side leans on the other to close what it leaves open."""
    overlay, objects = rendered
    policies, everyone = PolicySet(objects), pods(objects)
    ports = ports_to_try(objects, overlay)
    expected = call_graph(overlay)
    public = {(pod.name, "gateway", service("gateway").port, "TCP") for pod in everyone}
    assert connections(policies.egress_allows, everyone, everyone, ports) == expected
    assert connections(policies.ingress_allows, everyone, everyone, ports) == expected | public


def test_the_pods_that_dial_may_ask_kube_dns_and_no_other(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    overlay, objects = rendered
    policies = PolicySet(objects)
    callers = {c[0] for c in call_graph(overlay)}
    for pod in pods(objects):
        for protocol in PROTOCOLS:
            assert policies.allows(pod, KUBE_DNS, 53, protocol) is (pod.name in callers), (
                pod.name,
                protocol,
            )
        assert not policies.allows(pod, KUBE_DNS, 9153), pod.name


def test_from_outside_the_namespace_only_the_gateways_grpc_port_answers(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    overlay, objects = rendered
    policies = PolicySet(objects)
    ports = ports_to_try(objects, overlay)
    public = {("gateway", service("gateway").port, "TCP")}
    for outsider in (OUTSIDE, OTHER_NAMESPACE, KUBE_DNS, OTHER_KUBE_SYSTEM):
        reachable = connections(policies.allows, [outsider], pods(objects), ports)
        assert {c[1:] for c in reachable} == public, outsider.name


def test_nothing_leaves_the_namespace_but_dns(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    overlay, objects = rendered
    policies = PolicySet(objects)
    outsiders = (OUTSIDE, OTHER_NAMESPACE, OTHER_KUBE_SYSTEM)
    ports = ports_to_try(objects, overlay) | {53, 80, 443}
    assert connections(policies.egress_allows, pods(objects), outsiders, ports) == set()


def test_every_pod_is_denied_by_default(rendered: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = rendered
    policies = PolicySet(objects)
    deny_all = [
        p
        for p in policies.policies
        if p["spec"]["podSelector"] == {}
        and set(p["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    assert len(deny_all) == 1, "one policy that selects every pod and allows nothing"
    for pod in pods(objects):
        assert policies.isolated(pod, "Ingress") and policies.isolated(pod, "Egress"), pod.name


# The evaluator's own semantics, on small cases whose answer the Kubernetes docs spell out.

A = Endpoint("a", "ns", {"app": "a"}, {"web": (8080, "TCP")})
B = Endpoint("b", "ns", {"app": "b"})
B_ELSEWHERE = Endpoint("b", "other", {"app": "b"})


def policy(spec: dict[str, Any], namespace: str = "ns") -> dict[str, Any]:
    return {
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": spec,
    }


def test_evaluator_without_policies_everything_passes() -> None:
    assert PolicySet([]).allows(A, B, 1234, "UDP")


def test_evaluator_pod_and_namespace_selectors_in_one_peer_both_apply() -> None:
    in_one_peer = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "b"}}}
    policies = PolicySet([policy({"podSelector": {}, "ingress": [{"from": [in_one_peer]}]})])
    assert policies.allows(B_ELSEWHERE, A, 8080)
    assert not policies.allows(Endpoint("c", "other", {"app": "c"}), A, 8080)
    two_peers = [{"namespaceSelector": {}}, {"podSelector": {"matchLabels": {"app": "b"}}}]
    policies = PolicySet([policy({"podSelector": {}, "ingress": [{"from": two_peers}]})])
    assert policies.allows(Endpoint("c", "other", {"app": "c"}), A, 8080)


def test_evaluator_pod_selector_alone_means_the_policys_namespace() -> None:
    peer = {"podSelector": {"matchLabels": {"app": "b"}}}
    policies = PolicySet([policy({"podSelector": {}, "ingress": [{"from": [peer]}]})])
    assert policies.allows(B, A, 8080)
    assert not policies.allows(B_ELSEWHERE, A, 8080)


def test_evaluator_policy_types_default_to_ingress_plus_egress_when_present() -> None:
    ingress_only = PolicySet([policy({"podSelector": {}})])
    assert ingress_only.isolated(A, "Ingress") and not ingress_only.isolated(A, "Egress")
    with_egress = PolicySet([policy({"podSelector": {}, "egress": []})])
    assert with_egress.isolated(A, "Egress")
    assert not with_egress.allows(A, OUTSIDE, 443)


def test_evaluator_ports_match_by_number_range_name_and_protocol() -> None:
    ports = [{"port": "web"}, {"port": 9000, "endPort": 9010}, {"protocol": "UDP", "port": 53}]
    policies = PolicySet([policy({"podSelector": {}, "ingress": [{"ports": ports}]})])
    assert policies.allows(B, A, 8080) and policies.allows(B, A, 9005)
    assert policies.allows(B, A, 53, "UDP") and not policies.allows(B, A, 53, "TCP")
    assert not policies.allows(B, A, 8081) and not policies.allows(B, A, 9011)
    assert not policies.allows(B, A, 8080, "UDP")


def test_evaluator_refuses_what_it_does_not_model() -> None:
    peer = {"ipBlock": {"cidr": "10.0.0.0/8"}}
    policies = PolicySet([policy({"podSelector": {}, "ingress": [{"from": [peer]}]})])
    with pytest.raises(NetworkPolicyError, match="ipBlock"):
        policies.allows(B, A, 8080)
