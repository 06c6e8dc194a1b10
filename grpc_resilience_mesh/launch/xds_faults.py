"""Faults in the mesh's xDS control plane (gRFC A33: a client-side delay or abort by percent,
on every call of an edge or on one method's route), set by `mesh fault add --xds` and by the
experiments' `xds` fault.

A change is a read-modify-write of the plane's whole config: GET /config, change the edge's
`faults`, PUT /config (mesh-xds applies and pushes it before it answers, and writes it back to
xds/xds.json). A fault set here carries an `owner` field ("mesh fault", "experiment"); mesh-xds
ignores JSON fields it does not know and serves back the bytes it was given, so the owner
survives the round trip. A fault without one came from the policy's `xds.faults` (the launcher
wrote it): listed as "policy", left alone by a reset, and replaced by a fault added on the same
route until the launcher next writes the policy (which drops every fault set here).

The last PUT wins: two writers racing (the launcher taking on a policy and `mesh fault`) can
lose one change, as two `toxiproxy-cli` clients racing on one toxic can.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from grpc_resilience_mesh.services.topology import Edge, service, xds_edges

POLICY_OWNER = "policy"
"""How a fault the launcher wrote from the policy's `xds.faults` is listed (it has no owner)."""


class XdsFaultError(Exception):
    """The plane could not be reached or refused the change; the message says which, in one
    line."""


@dataclass(frozen=True)
class XdsFault:
    """One route's A33 fault, as `mesh fault list` shows it."""

    edge: str
    method: str
    """The method's short name, or `*` for every call of the edge."""
    abort_percent: float
    abort_code: str
    """The status an aborted call ends with ("" when the fault does not abort)."""
    delay_percent: float
    delay_s: float
    owner: str


def xds_edge(name: str) -> Edge:
    """The edge `name` among those dialled through xDS, or XdsFaultError naming them."""
    for e in xds_edges():
        if e.name == name:
            return e
    known = ", ".join(e.name for e in xds_edges())
    raise XdsFaultError(f"{name!r} is not dialled through xDS (under --xds: {known})")


def route_path(edge: Edge, method: str | None) -> str | None:
    """The route's path for `method` of the edge's dependency (None: every call)."""
    if method is None or method == "*":
        return None
    return f"/{service(edge.dependency).grpc_service}/{method}"


def _edge_faults(config: dict[str, Any], edge: Edge, create: bool = False) -> list[dict[str, Any]]:
    """The edge's list of faults in `config` (made, empty, when `create`)."""
    try:
        found = config["nodes"][edge.caller][edge.dependency]
    except (KeyError, TypeError):
        raise XdsFaultError(f"the plane serves no {edge.dependency} to {edge.caller}") from None
    faults: list[dict[str, Any]] = (
        found.setdefault("faults", []) if create else found.get("faults") or []
    )
    return faults


def _route_fault(config: dict[str, Any], edge: Edge, method: str | None) -> dict[str, Any] | None:
    path = route_path(edge, method)
    return next((f for f in _edge_faults(config, edge) if f.get("path") == path), None)


def with_fault(
    config: dict[str, Any],
    edge: Edge,
    method: str | None,
    owner: str,
    abort: tuple[float, str] | None = None,
    delay: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """`config` with an abort (percent, code name) and/or a delay (percent, seconds) on the
    route of `method` (None: every call). A fault someone set there keeps its other part (a
    delay added to an abort makes one fault doing both); the policy's own is replaced."""
    faults = _edge_faults(config, edge, create=True)
    path = route_path(edge, method)
    old = _route_fault(config, edge, method)
    fault: dict[str, Any] = {} if old is None or "owner" not in old else dict(old)
    if old is not None:
        faults.remove(old)
    if path is not None:
        fault["path"] = path
    if abort is not None:
        fault.update(abort_percent=abort[0], abort_code=abort[1])
    if delay is not None:
        fault.update(delay_percent=delay[0], delay_s=delay[1])
    fault["owner"] = owner
    faults.append(fault)
    return config


def without_faults(
    config: dict[str, Any], edge: Edge | None = None, method: str | None = None
) -> tuple[dict[str, Any], int]:
    """`config` less the faults someone set (never the policy's): on `edge`'s route of
    `method` (None: all its routes), or on every edge; and how many were removed."""
    removed = 0
    for e in xds_edges() if edge is None else (edge,):
        try:
            faults = _edge_faults(config, e)
        except XdsFaultError:
            continue
        path = route_path(e, method)
        kept = [f for f in faults if "owner" not in f or (method and f.get("path") != path)]
        removed += len(faults) - len(kept)
        faults[:] = kept
    return config, removed


def listed(config: dict[str, Any]) -> list[XdsFault]:
    """Every fault the plane serves, edge by edge, and who set it."""
    out = []
    for e in xds_edges():
        try:
            faults = _edge_faults(config, e)
        except XdsFaultError:
            continue
        for f in faults:
            aborts = float(f.get("abort_percent", 0.0)) > 0
            out.append(
                XdsFault(
                    e.name,
                    str(f.get("path") or "*").rsplit("/", 1)[-1],
                    float(f.get("abort_percent", 0.0)),
                    str(f.get("abort_code", "")) if aborts else "",
                    float(f.get("delay_percent", 0.0)),
                    float(f.get("delay_s", 0.0)),
                    str(f.get("owner", POLICY_OWNER)),
                )
            )
    return out


class PlaneAdmin:
    """The plane's admin HTTP (loopback): its config, read and replaced, with the run's token
    (`admin_token` in mesh.json, which `mesh up` gives the plane as MESH_XDS_TOKEN)."""

    def __init__(self, admin_url: str, token: str | None = None, timeout_s: float = 2.0) -> None:
        self.admin_url = admin_url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        request = urllib.request.Request(
            f"{self.admin_url}{path}", data=body, method=method, headers=self._headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                raw: bytes = answer.read()
                return raw
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace").strip()
            raise XdsFaultError(f"mesh-xds refused {method} {path}: {detail}") from None
        except OSError as err:
            raise XdsFaultError(f"mesh-xds at {self.admin_url}: {err}") from None

    def config(self) -> dict[str, Any]:
        try:
            found = json.loads(self._request("GET", "/config"))
        except ValueError as err:
            raise XdsFaultError(f"mesh-xds's GET /config is not JSON: {err}") from None
        if not isinstance(found, dict):
            raise XdsFaultError("mesh-xds's GET /config is not a JSON object")
        return found

    def put(self, config: dict[str, Any]) -> int:
        """Replace the config; the version the plane pushed."""
        answer = self._request("PUT", "/config", json.dumps(config, sort_keys=True).encode())
        return int(json.loads(answer)["version"])

    def resources(self, node: str) -> dict[str, Any]:
        """What the plane sends `node` (its listeners, clusters and endpoints, as JSON)."""
        found: dict[str, Any] = json.loads(self._request("GET", f"/resources?node={node}"))
        return found

    def faults(self) -> list[XdsFault]:
        return listed(self.config())

    def add(
        self,
        edge: Edge,
        method: str | None,
        owner: str,
        abort: tuple[float, str] | None = None,
        delay: tuple[float, float] | None = None,
    ) -> int:
        """Set a fault (read-modify-write); the version pushed. A route that has a fault
        already is pushed without it first: grpcio 1.85 ACKs a fault whose percentage alone
        changed (CSDS shows the new numerator) and goes on injecting the old share (30% -> 60%
        kept 30%), while a fault that is new to the route applies at once."""
        config = self.config()
        if _route_fault(config, edge, method) is not None:
            cleared = copy.deepcopy(config)
            faults = _edge_faults(cleared, edge)
            faults[:] = [f for f in faults if f.get("path") != route_path(edge, method)]
            self.put(cleared)
        return self.put(with_fault(config, edge, method, owner, abort, delay))

    def remove(self, edge: Edge | None = None, method: str | None = None) -> int:
        """Remove the faults someone set (see `without_faults`); how many were removed."""
        config, removed = without_faults(self.config(), edge, method)
        if removed:
            self.put(config)
        return removed
