"""The NetworkPolicies as the API server stored them, against the pods it actually runs: every
policy selects the pods it is named for, and between those pods exactly the edges of
grpc_resilience_mesh/services/topology.py (for this overlay's wiring) and the spans to Jaeger are
allowed. Stored is not enforced: that takes a CNI that enforces NetworkPolicy (deploy/README.md)."""

from __future__ import annotations

from grpc_resilience_mesh.services.topology import SERVICES
from tests.k8s.cluster import APP, Kubectl, Obj
from tests.k8s.conftest import Applied
from tests.unit.deploy.network_policy import Endpoint, PolicySet, selects
from tests.unit.deploy.test_deploy_network_policies import call_graph, connections


def endpoint(pod: Obj) -> Endpoint:
    """A pod as the server runs it: its labels and named container ports."""
    return Endpoint(
        pod["metadata"]["labels"][APP],
        pod["metadata"]["namespace"],
        pod["metadata"]["labels"],
        {
            port["name"]: (port["containerPort"], port.get("protocol", "TCP"))
            for container in pod["spec"]["containers"]
            for port in container.get("ports", [])
            if "name" in port
        },
    )


def served(kubectl: Kubectl) -> list[Endpoint]:
    pods = [p for p in kubectl.items("pods") if not p["metadata"].get("deletionTimestamp")]
    return [endpoint(p) for p in pods]


def ports(pods: list[Endpoint], policies: list[Obj], overlay: str) -> set[int]:
    """Every port a pod names, a policy names, or the call graph uses."""
    named = {number for pod in pods for number, _ in pod.named_ports.values()}
    in_rules = {
        entry["port"]
        for policy in policies
        for direction in ("ingress", "egress")
        for rule in policy["spec"].get(direction) or []
        for entry in rule.get("ports") or []
        if isinstance(entry.get("port"), int)
    }
    return named | in_rules | {edge[2] for edge in call_graph(overlay)}


def test_the_policies_rendered_are_the_policies_stored(
    rolled_out: Applied, kubectl: Kubectl
) -> None:
    stored = {p["metadata"]["name"]: p["spec"] for p in kubectl.items("networkpolicies")}
    rendered = {p["metadata"]["name"]: p["spec"] for p in rolled_out.of_kind("NetworkPolicy")}
    assert set(stored) == set(rendered)
    for name, spec in rendered.items():
        assert stored[name]["podSelector"] == spec["podSelector"], name


def meant_for(policy: str, apps: set[str]) -> set[str]:
    """The pods a policy is written for, by its name: `default-deny` every pod, the shared
    traces-and-DNS egress the services of topology.py, any other the pods of the service its
    name begins with (`gateway`, `gateway-public`)."""
    if policy == "default-deny":
        return apps
    if policy == "mesh-services-to-jaeger-and-dns":
        return {s.name for s in SERVICES}
    return {policy.split("-")[0]}


def test_each_policy_selects_the_running_pods_it_is_meant_for(
    rolled_out: Applied, kubectl: Kubectl
) -> None:
    pods = served(kubectl)
    apps = {pod.name for pod in pods}
    for policy in kubectl.items("networkpolicies"):
        name, selector = policy["metadata"]["name"], policy["spec"]["podSelector"]
        wanted = meant_for(name, apps)
        assert wanted <= apps, f"{name}: no pod of {sorted(wanted - apps)} runs"
        assert {pod.name for pod in pods if selects(selector, pod.labels)} == wanted, name


def test_the_running_pods_reach_each_other_exactly_along_the_call_graph(
    rolled_out: Applied, kubectl: Kubectl
) -> None:
    stored = kubectl.items("networkpolicies")
    namespaces = kubectl.items("namespaces")  # their labels, as namespaceSelectors read them
    for obj, kind in [
        *((p, "NetworkPolicy") for p in stored),
        *((n, "Namespace") for n in namespaces),
    ]:
        obj["kind"] = kind  # a List's items may leave it out
    pods = served(kubectl)
    policies = PolicySet([*stored, *namespaces])
    allowed = connections(policies.allows, pods, pods, ports(pods, stored, rolled_out.name))
    expected = call_graph(rolled_out.name)
    assert {edge[:2] for edge in expected} <= {(s.name, t.name) for s in pods for t in pods}
    assert sorted(allowed - expected) == [], "open, but no edge of the topology"
    assert sorted(expected - allowed) == [], "edges of the topology the stored policies block"
