"""The rules for a toxic, shared by the experiment schema
(grpc_resilience_mesh/chaos/experiment/model.py) and `mesh fault add`: which edges and replica
proxies exist, which toxic types Toxiproxy has, which attributes each type takes and the values it
applies as written, each refusal with a "did you mean" when a known name is close.

Light on purpose (the topology, the toxic types as data, difflib): the CLI checks its input
with it before it talks to anything, and `mesh chaos validate` loads no toxic's stream code.
"""

from __future__ import annotations

from grpc_resilience_mesh.chaos.experiment.bounds import toxic_attribute
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.embedded_toxiproxy.toxic_types import TOXIC_ATTRIBUTES
from grpc_resilience_mesh.services import topology

TOXIC_NAMES: tuple[str, ...] = tuple(name for name in TOXIC_ATTRIBUTES if name != "noop")
"""The toxic types an experiment or `mesh fault add` may use: Toxiproxy's, but noop (which
does nothing, so a fault made of it tests nothing)."""


def edge_names() -> list[str]:
    """Every edge (a fault on it hits every replica's proxy), then every replica's proxy
    (replica 1's proxy bears its edge's name: named once)."""
    names = [e.name for e in topology.EDGES] + [p.name for p in topology.PROXIES]
    return list(dict.fromkeys(names))


def check_edge(value: str) -> str:
    """An edge or one replica's proxy, else ValueError naming the close one and the known."""
    names = edge_names()
    if value not in names:
        raise ValueError(
            f"unknown edge {shown(value)}{did_you_mean(value, names)} (known: {', '.join(names)})"
        )
    return value


def check_toxic_type(value: str) -> str:
    """A toxic type of TOXIC_NAMES, else ValueError with the close one and the known."""
    if value not in TOXIC_NAMES:
        raise ValueError(
            f"unknown toxic {shown(value)}{did_you_mean(value, TOXIC_NAMES)} "
            f"(known: {', '.join(TOXIC_NAMES)})"
        )
    return value


def attribute_problems(toxic: str, attributes: dict[str, int]) -> list[str]:
    """Every attribute a `toxic` lacks (with the close one) or whose value Toxiproxy would not
    apply as written; empty when all are good."""
    known = TOXIC_ATTRIBUTES[toxic]
    found = []
    for key, value in attributes.items():
        if key not in known:
            found.append(
                f"attributes.{shown(key)[1:-1]}: a {toxic} toxic has "
                f"{', '.join(known)}{did_you_mean(key, known)}"
            )
            continue
        try:
            toxic_attribute(toxic, key, value)
        except ValueError as err:
            found.append(str(err))
    return found
