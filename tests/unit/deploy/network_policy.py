"""What a set of NetworkPolicies lets through, by the rules of networking.k8s.io/v1.

A connection from `source` to `target` on (port, protocol) passes when the source's egress and
the target's ingress both allow it. A direction is open for a pod that no policy of that
direction selects; once one selects it, only what some selecting policy's rules allow passes
(policies add up, none subtracts). A rule with no peers matches every peer, one with no ports
every port. A peer with only podSelector means pods of the policy's own namespace, with only
namespaceSelector every pod of the selected namespaces, with both the pods matching both.
policyTypes defaults to Ingress, plus Egress when the spec has egress rules. Named ports are
the target's container ports. Anything else (ipBlock, an unknown selector operator) raises
NetworkPolicyError, so the manifests stay within what these tests can judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


class NetworkPolicyError(ValueError):
    """A policy uses something this evaluator does not implement."""


@dataclass(frozen=True)
class Endpoint:
    """One end of a connection: a pod (namespace set) or an address outside the cluster."""

    name: str
    namespace: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    named_ports: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Container port name -> (number, protocol)."""

    @property
    def in_cluster(self) -> bool:
        return self.namespace is not None


def selects(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector: matchLabels and matchExpressions, all of them; {} selects all."""
    selector = selector or {}
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise NetworkPolicyError(f"selector fields {sorted(unknown)}")
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        if operator == "In":
            ok = key in labels and labels[key] in values
        elif operator == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif operator == "Exists":
            ok = key in labels
        elif operator == "DoesNotExist":
            ok = key not in labels
        else:
            raise NetworkPolicyError(f"selector operator {operator!r}")
        if not ok:
            return False
    return True


class PolicySet:
    """The NetworkPolicies among rendered objects, with the namespaces' labels."""

    def __init__(self, objects: Iterable[Obj]) -> None:
        objects = list(objects)
        self.policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
        self.namespace_labels = {
            o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
            for o in objects
            if o["kind"] == "Namespace"
        }

    def allows(self, source: Endpoint, target: Endpoint, port: int, protocol: str = "TCP") -> bool:
        return self.egress_allows(source, target, port, protocol) and self.ingress_allows(
            source, target, port, protocol
        )

    def egress_allows(
        self, source: Endpoint, target: Endpoint, port: int, protocol: str = "TCP"
    ) -> bool:
        """The source's side alone: whether its egress lets the connection out."""
        return self._direction_allows("Egress", source, target, port, protocol)

    def ingress_allows(
        self, source: Endpoint, target: Endpoint, port: int, protocol: str = "TCP"
    ) -> bool:
        """The target's side alone: whether its ingress lets the connection in."""
        return self._direction_allows("Ingress", target, source, port, protocol, port_owner=target)

    def isolated(self, pod: Endpoint, direction: str) -> bool:
        """Whether some policy selects `pod` for `direction` (so only allowed traffic passes)."""
        return any(self._selecting(pod, direction))

    def _direction_allows(
        self,
        direction: str,
        subject: Endpoint,
        peer: Endpoint,
        port: int,
        protocol: str,
        port_owner: Endpoint | None = None,
    ) -> bool:
        if not subject.in_cluster:
            return True  # outside the cluster no NetworkPolicy applies
        selecting = list(self._selecting(subject, direction))
        if not selecting:
            return True
        rules_key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
        owner = port_owner or peer
        for policy in selecting:
            namespace = policy["metadata"]["namespace"]
            for rule in policy["spec"].get(rules_key) or []:
                peers = rule.get(peers_key) or []
                if peers and not any(self._peer_matches(p, namespace, peer) for p in peers):
                    continue
                if _ports_match(rule.get("ports") or [], port, protocol, owner):
                    return True
        return False

    def _selecting(self, pod: Endpoint, direction: str) -> Iterable[Obj]:
        for policy in self.policies:
            if (
                policy["metadata"].get("namespace") == pod.namespace
                and direction in policy_types(policy["spec"])
                and selects(policy["spec"].get("podSelector"), pod.labels)
            ):
                yield policy

    def _peer_matches(self, peer: Obj, policy_namespace: str, endpoint: Endpoint) -> bool:
        unknown = set(peer) - {"podSelector", "namespaceSelector"}
        if unknown:
            raise NetworkPolicyError(f"peer fields {sorted(unknown)} (ipBlock is not modelled)")
        if not endpoint.in_cluster:
            return False  # pod and namespace selectors only ever select pods
        if "namespaceSelector" in peer:
            labels = {
                **self.namespace_labels.get(endpoint.namespace or "", {}),
                "kubernetes.io/metadata.name": endpoint.namespace or "",
            }
            if not selects(peer["namespaceSelector"], labels):
                return False
        elif endpoint.namespace != policy_namespace:
            return False
        return "podSelector" not in peer or selects(peer["podSelector"], endpoint.labels)


def policy_types(spec: Obj) -> list[str]:
    """spec.policyTypes, or its default: Ingress, plus Egress when the spec has egress rules."""
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", "Egress"] if "egress" in spec else ["Ingress"]


def _ports_match(ports: list[Obj], port: int, protocol: str, owner: Endpoint) -> bool:
    if not ports:
        return True
    for entry in ports:
        if entry.get("protocol", "TCP") != protocol:
            continue
        wanted = entry.get("port")
        if wanted is None:
            return True
        if isinstance(wanted, str):
            if owner.named_ports.get(wanted) == (port, protocol):
                return True
        elif wanted <= port <= (entry.get("endPort") or wanted):
            return True
    return False
