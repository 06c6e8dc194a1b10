"""Each replica of a replicated service as the console and `mesh status` show it: the calls it
served over the window (its own /metrics), whether outlier ejection keeps it out of each
caller's rotation (`mesh_replica_ejected`, by the address the caller dials), and the toxics
and disabled proxies on the proxies in front of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.services.topology import (
    EDGES,
    REPLICAS,
    edge_proxies,
    replica_of,
    replicas,
)


@dataclass
class ReplicaProxyView:
    """One proxy in front of the replica: the edge it belongs to, and its faults."""

    name: str
    edge: str
    caller: str
    enabled: bool = True
    toxics: list[str] = field(default_factory=list)


@dataclass
class ReplicaView:
    name: str
    service: str
    calls_per_s: float = 0.0
    error_rate: float = 0.0
    ejection: dict[str, str] = field(default_factory=dict)
    """Caller -> `in` or `ejected` (absent: that caller's ejection is off)."""
    proxies: list[ReplicaProxyView] = field(default_factory=list)


def _served(window: Snapshot, seconds: float, instance: str) -> tuple[float, float]:
    """(calls per second, share not OK) the process `instance` answered over the window."""
    calls = failed = 0.0
    for (name_of, name, labels), value in window.values.items():
        if name_of == instance and name == "mesh_server_calls_total":
            calls += value
            failed += value if dict(labels).get("code") != "OK" else 0.0
    return (calls / seconds if seconds > 0 else 0.0), (failed / calls if calls else 0.0)


def _ejection(now: Snapshot, addresses: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Replica -> caller -> in/ejected, from the callers' `mesh_replica_ejected` gauges."""
    out: dict[str, dict[str, str]] = {}
    for (name_of, name, labels), value in now.values.items():
        if name != "mesh_replica_ejected":
            continue
        replica = addresses.get(dict(labels).get("replica", ""))
        if replica is not None:
            caller = replica_of(name_of)
            worst = out.setdefault(replica, {}).get(caller)
            out[replica][caller] = "ejected" if value or worst == "ejected" else "in"
    return out


def replica_views(
    now: Snapshot,
    window: Snapshot,
    seconds: float,
    proxies: Mapping[str, Mapping[str, Any]],
    dialled: Mapping[str, str],
) -> list[ReplicaView]:
    """Every replica of every replicated service. `proxies`: Toxiproxy's listing by proxy name
    (empty without Toxiproxy); `dialled`: proxy name -> the address callers dial for it."""
    addresses: dict[str, str] = {}
    views: dict[str, ReplicaView] = {}
    for service in sorted(REPLICAS):
        for spec in replicas(service):
            calls, errors = _served(window, seconds, spec.name)
            views[spec.name] = ReplicaView(spec.name, service, calls, errors)
    for e in EDGES:
        for p in edge_proxies(e):
            view = views.get(p.upstream.name)
            if view is None:
                continue
            if p.name in dialled:
                addresses[dialled[p.name]] = p.upstream.name
            listed = proxies.get(p.name) or {}
            view.proxies.append(
                ReplicaProxyView(
                    p.name,
                    e.name,
                    e.caller,
                    bool(listed.get("enabled", True)),
                    [_toxic_text(t) for t in listed.get("toxics") or ()],
                )
            )
    for replica, by_caller in _ejection(now, addresses).items():
        views[replica].ejection = by_caller
    return list(views.values())


def _toxic_text(toxic: Mapping[str, Any]) -> str:
    attrs = " ".join(f"{k}={v}" for k, v in dict(toxic.get("attributes") or {}).items())
    return f"{toxic.get('type')} {attrs}".strip()
