"""Disruptions on the kwok nodes, watched event by event: a drain keeps every
PodDisruptionBudget's minimum, a NotReady node's pods come back on the other node, and a rolling
update of the gateway keeps as many pods ready as its strategy promises."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.k8s.cluster import APP, Kubectl, Obj, PodWatch, ready, wait_until
from tests.k8s.conftest import Applied

NOT_READY = "node-not-ready.stage.kwok.x-k8s.io"  # kwok's chaos stage for nodes


def all_available(kubectl: Kubectl) -> bool:
    return all(
        d["status"].get("availableReplicas") == d["spec"]["replicas"]
        and d["status"].get("updatedReplicas") == d["spec"]["replicas"]
        and d["status"].get("replicas") == d["spec"]["replicas"]
        for d in kubectl.items("deployments")
    )


def pods_on(kubectl: Kubectl, node: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in kubectl.items("pods")
        if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")
    ]


@pytest.fixture
def crowded(rolled_out: Applied, kubectl: Kubectl, nodes: list[str]) -> Iterator[str]:
    """Every pod moved onto the first node (the second cordoned while all restart), so a drain
    of the first must evict both replicas of each budgeted service: the budget has to hold one
    back until its replacement is Ready on the other node."""
    first, second = nodes
    kubectl.run("cordon", second)
    try:
        kubectl.run("rollout", "restart", "deployment")
        wait_until("every Deployment restarted on one node", lambda: all_available(kubectl))
        wait_until("no pod left on the cordoned node", lambda: not pods_on(kubectl, second))
    finally:
        kubectl.run("uncordon", second)
    yield first
    kubectl.run("uncordon", first)


def budgets_healthy(budgets: list[Obj]) -> Any:
    def measure(pods: Mapping[str, Obj]) -> dict[str, int]:
        return {
            b["metadata"]["name"]: sum(
                ready(p)
                and b["spec"]["selector"]["matchLabels"].items() <= p["metadata"]["labels"].items()
                for p in pods.values()
            )
            for b in budgets
        }

    return measure


def test_a_drain_keeps_every_disruption_budgets_minimum(
    crowded: str, rolled_out: Applied, kubectl: Kubectl
) -> None:
    budgets = kubectl.items("poddisruptionbudgets")
    assert {b["metadata"]["name"] for b in budgets} == {
        b["metadata"]["name"] for b in rolled_out.of_kind("PodDisruptionBudget")
    }
    assert all(set(b["spec"]["selector"]) == {"matchLabels"} for b in budgets)
    before = pods_on(kubectl, crowded)
    with PodWatch(kubectl, budgets_healthy(budgets)) as watch:
        drained = kubectl.run(
            "drain",
            crowded,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout",
            "150s",
            timeout=180,
            check=False,
        )
        wait_until("every Deployment available after the drain", lambda: all_available(kubectl))
    assert drained.returncode == 0, drained.stderr
    assert before and pods_on(kubectl, crowded) == [], "the drained node still runs pods"
    for budget in budgets:
        name, minimum = budget["metadata"]["name"], budget["spec"]["minAvailable"]
        assert watch.lowest[name] >= minimum, (name, watch.lowest[name], minimum)
        assert watch.highest[name] > minimum, f"{name}: the drain never had a pod to spare"


@pytest.fixture
def failing_node(rolled_out: Applied, kubectl: Kubectl, nodes: list[str]) -> Iterator[str]:
    """The node running the most pods, labelled for kwok's node-not-ready stage; afterwards
    the label goes and kwok reports the node Ready again."""
    node = max(nodes, key=lambda n: len(pods_on(kubectl, n)))
    kubectl.run("label", "node", node, f"{NOT_READY}=true")
    yield node
    kubectl.run("label", "node", node, f"{NOT_READY}-")
    wait_until(
        f"{node} Ready again", lambda: node_ready(kubectl, node) and not taints(kubectl, node)
    )


def node_ready(kubectl: Kubectl, node: str) -> bool:
    conditions = kubectl.get("node", node)["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def taints(kubectl: Kubectl, node: str) -> list[str]:
    return [t["key"] for t in kubectl.get("node", node)["spec"].get("taints") or []]


def test_a_not_ready_nodes_pods_are_rescheduled_on_the_other(
    failing_node: str, kubectl: Kubectl, nodes: list[str]
) -> None:
    assert pods_on(kubectl, failing_node), "the failing node runs nothing to reschedule"
    wait_until(f"{failing_node} NotReady", lambda: not node_ready(kubectl, failing_node), 30)
    wait_until(
        "the node lifecycle controller's not-ready taint",
        lambda: "node.kubernetes.io/not-ready" in taints(kubectl, failing_node),
        60,
    )
    wait_until("no pod left on the NotReady node", lambda: not pods_on(kubectl, failing_node))
    wait_until("every Deployment available again", lambda: all_available(kubectl))
    (other,) = set(nodes) - {failing_node}
    running = [p for p in kubectl.items("pods") if ready(p)]
    assert running and {p["spec"]["nodeName"] for p in running} == {other}


def rollout_bounds(deployment: Obj) -> tuple[int, int]:
    """(fewest ready, most pods) a RollingUpdate allows: maxUnavailable rounds down, maxSurge
    up, as the Deployment controller rounds them."""
    replicas = deployment["spec"]["replicas"]
    strategy = deployment["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate", strategy

    def scaled(value: int | str, rounding: Any) -> int:
        if isinstance(value, int):
            return value
        return int(rounding(replicas * int(value.rstrip("%")) / 100))

    unavailable = scaled(strategy["rollingUpdate"]["maxUnavailable"], math.floor)
    surge = scaled(strategy["rollingUpdate"]["maxSurge"], math.ceil)
    return replicas - unavailable, replicas + surge


def gateway_pods(pods: Mapping[str, Obj]) -> dict[str, int]:
    gateways = [p for p in pods.values() if p["metadata"]["labels"].get(APP) == "gateway"]
    return {
        "ready": sum(ready(p) for p in gateways),
        "pods": sum(not p["metadata"].get("deletionTimestamp") for p in gateways),
        "revisions": len({p["metadata"]["labels"]["pod-template-hash"] for p in gateways}),
    }


def test_a_rolling_update_of_the_gateway_keeps_the_strategys_availability(
    rolled_out: Applied, kubectl: Kubectl
) -> None:
    deployment = kubectl.get("deployment", "gateway")
    fewest_ready, most_pods = rollout_bounds(deployment)
    with PodWatch(kubectl, gateway_pods) as watch:
        kubectl.run("rollout", "restart", "deployment/gateway")
        kubectl.run("rollout", "status", "deployment/gateway", "--timeout", "120s", timeout=150)
        wait_until("only the new revision left", lambda: watch.now()["revisions"] == 1)
    assert watch.highest["revisions"] == 2, "the watch saw no old and new pods side by side"
    assert watch.lowest["ready"] >= fewest_ready, (watch.lowest, fewest_ready)
    assert watch.highest["pods"] <= most_pods, (watch.highest, most_pods)
    assert watch.now()["ready"] == deployment["spec"]["replicas"]
