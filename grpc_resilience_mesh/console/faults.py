"""Faults on the mesh, whoever set them: Toxiproxy toxics (and disabled proxies) by edge, app
faults by service and method through FaultAdmin, the same APIs the experiments use.

Who set a fault is read from the toxic's name (`console_...` the console, `cli_...` `mesh
fault`, `exp<N>_...` an experiment) and, for app faults, which carry no name, from a small
owners file in the state dir that the console and `mesh fault` write when they set one: a
fault whose settings match what they recorded is theirs; any other is an experiment's while
one runs, else another client's.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import EDGES, edge_proxies, replica_of, service
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc

OWNERS_FILE = "fault-owners.json"
PREFIXES = {"console_": "console", "cli_": "mesh fault"}
_EXPERIMENT = re.compile(r"^exp\d+_")
ADMIN_TIMEOUT_S = 2.0


class FaultError(Exception):
    """A fault could not be read or changed; the message says which and why, in one line."""


@dataclass
class Toxic:
    edge: str
    name: str
    type: str
    stream: str
    toxicity: float
    attributes: dict[str, Any]
    owner: str
    proxies: list[str] = field(default_factory=list)
    """The proxies it is on: every replica's of the edge, or (set by proxy name) some."""


@dataclass
class AppFault:
    service: str
    method: str
    error_rate: float
    code: str
    delay_s: float
    pushback_ms: int
    owner: str


def proxies_of(edge_name: str) -> list[str]:
    """An edge's proxies, one per replica of its dependency (as the experiments fault them);
    a name that is no edge is passed on as it is, for Toxiproxy to judge."""
    for e in EDGES:
        if e.name == edge_name:
            return [p.name for p in edge_proxies(e)]
    return [edge_name]


def edge_of(proxy_name: str) -> str:
    """`gateway_to_profile-2` (replica 2's proxy) -> `gateway_to_profile`."""
    for e in EDGES:
        if proxy_name in (p.name for p in edge_proxies(e)):
            return e.name
    return proxy_name


def toxic_owner(name: str) -> str:
    for prefix, owner in PREFIXES.items():
        if name.startswith(prefix):
            return owner
    return "experiment" if _EXPERIMENT.match(name) else "another client"


def full_method(service_name: str, method: str) -> str:
    """`Recommend` on recommendation -> /mesh.v1.RecommendationService/Recommend; `*` and
    full names pass through. An unknown service raises FaultError."""
    try:
        grpc_service = service(service_name).grpc_service
    except KeyError as err:
        raise FaultError(str(err.args[0])) from None
    if method == "*" or method.startswith("/"):
        return method
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", method):
        raise FaultError(f"not a method name: {method!r}")
    return f"/{grpc_service}/{method}"


def _fault_key(fault: AppFault | dict[str, Any]) -> str:
    d = asdict(fault) if isinstance(fault, AppFault) else fault
    return json.dumps([d["error_rate"], d["code"], round(float(d["delay_s"]), 6), d["pushback_ms"]])


class FaultControl:
    """Reads and changes every fault of one running mesh."""

    def __init__(
        self,
        toxiproxy: str | None,
        admin: dict[str, str],
        state_dir: Path,
        experiment_running: Any = None,
        admin_token: str | None = None,
    ) -> None:
        self.client = (
            ToxiproxyClient(toxiproxy, timeout_s=2.0, token=admin_token) if toxiproxy else None
        )
        self.admin = admin
        self._metadata = admin_metadata(admin_token)
        self._owners_path = state_dir / OWNERS_FILE
        self._experiment_running = experiment_running or (lambda: False)
        self._channels: dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()

    def _instances(self, service_name: str) -> list[str]:
        """Every process of a service (its replicas too): a fault applies to all of them."""
        found = [n for n in sorted(self.admin) if replica_of(n) == service_name]
        if not found:
            known = ", ".join(sorted({replica_of(n) for n in self.admin}))
            raise FaultError(f"unknown service {service_name!r}; known: {known}")
        return found

    def channel(self, instance: str) -> grpc.Channel:
        """The admin channel of one process (kept open: one per admin address)."""
        addr = self.admin[instance]
        with self._lock:
            channel = self._channels.get(addr)
            if channel is None:
                channel = self._channels[addr] = grpc.insecure_channel(addr)
        return channel

    def _stub(self, instance: str) -> admin_pb2_grpc.FaultAdminStub:
        return admin_pb2_grpc.FaultAdminStub(self.channel(instance))

    # Toxics -----------------------------------------------------------------------------

    def _toxiproxy(self) -> ToxiproxyClient:
        if self.client is None:
            raise FaultError("this mesh runs without Toxiproxy (--direct): no toxics")
        return self.client

    def proxies(self) -> dict[str, dict[str, Any]]:
        try:
            return self._toxiproxy().proxies()
        except ToxiproxyError as err:
            raise FaultError(f"Toxiproxy: {err}") from None

    def toxics(self, proxies: dict[str, dict[str, Any]] | None = None) -> list[Toxic]:
        if self.client is None:
            return []
        proxies = self.proxies() if proxies is None else proxies
        found: dict[tuple[str, str], Toxic] = {}  # a toxic on every replica's proxy shows once
        for name, proxy in sorted(proxies.items()):
            for t in proxy.get("toxics") or ():
                toxic = found.setdefault(
                    (edge_of(name), t["name"]),
                    Toxic(
                        edge_of(name),
                        t["name"],
                        t["type"],
                        t.get("stream", "downstream"),
                        float(t.get("toxicity", 1.0)),
                        dict(t.get("attributes") or {}),
                        toxic_owner(t["name"]),
                    ),
                )
                toxic.proxies.append(name)
        return list(found.values())

    def add_toxic(
        self,
        edge: str,
        type: str,
        attributes: dict[str, int],
        stream: str = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
        owner_prefix: str = "console_",
    ) -> Toxic:
        name = name or f"{owner_prefix}{type}_{stream}"
        client = self._toxiproxy()
        done: list[str] = []
        try:
            for proxy in proxies_of(edge):
                made = client.add_toxic(proxy, type, stream, toxicity, attributes, name)
                done.append(proxy)
        except ToxiproxyError as err:
            for proxy in done:  # all of the edge's proxies, or none
                client.remove_toxic(proxy, name)
            raise FaultError(f"toxic {name} on {edge}: {err.message}") from None
        return Toxic(
            edge,
            made["name"],
            made["type"],
            made.get("stream", stream),
            float(made.get("toxicity", toxicity)),
            dict(made.get("attributes") or {}),
            toxic_owner(made["name"]),
            done,
        )

    def remove_toxic(self, edge: str, name: str) -> list[str]:
        """Removes the toxic from the edge's proxies that have it; returns those proxies."""
        proxies = proxies_of(edge)
        removed: list[str] = []
        for proxy in proxies:
            try:
                self._toxiproxy().remove_toxic(proxy, name)
                removed.append(proxy)
            except ToxiproxyError as err:
                if err.status != 404 or (proxy == proxies[-1] and not removed):
                    raise FaultError(f"toxic {name} on {edge}: {err.message}") from None
        return removed

    def set_enabled(self, edge: str, enabled: bool) -> list[str]:
        """Enables or disables every proxy of the edge (or the one named); returns them."""
        try:
            for proxy in proxies_of(edge):
                self._toxiproxy().update_proxy(proxy, enabled=enabled)
        except ToxiproxyError as err:
            raise FaultError(f"proxy {edge}: {err.message}") from None
        return proxies_of(edge)

    # App faults -------------------------------------------------------------------------

    def _owners(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self._owners_path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save_owners(self, owners: dict[str, dict[str, Any]]) -> None:
        self._owners_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._owners_path.parent, prefix=f".{OWNERS_FILE}.")
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(owners))
        os.replace(tmp, self._owners_path)

    def app_faults(self) -> list[AppFault]:
        owners = self._owners()
        running = self._experiment_running()
        found: list[AppFault] = []
        seen: set[tuple[str, str]] = set()
        # Faults are set on every replica at once (here, by `mesh fault` and by experiments),
        # so the first process of each service speaks for it: fewer calls per refresh.
        for instance in sorted(n for n in self.admin if replica_of(n) == n):
            name = instance
            try:
                listing = self._stub(instance).ListFaults(
                    admin_pb2.ListFaultsRequest(), timeout=ADMIN_TIMEOUT_S, metadata=self._metadata
                )
            except grpc.RpcError:
                continue  # a service restarting: its faults are gone with it
            for f in listing.faults:
                if (name, f.method) in seen:
                    continue  # the same method's fault on another replica
                seen.add((name, f.method))
                fault = AppFault(name, f.method, f.error_rate, f.code, f.delay_s, f.pushback_ms, "")
                mine = owners.get(f"{name} {f.method}")
                if mine is not None and mine.get("key") == _fault_key(fault):
                    fault.owner = str(mine["owner"])
                else:
                    fault.owner = "experiment" if running else "another client"
                found.append(fault)
        return found

    def set_app_fault(
        self,
        service_name: str,
        method: str,
        error_rate: float = 1.0,
        code: str = "UNAVAILABLE",
        delay_s: float = 0.0,
        pushback_ms: int = -1,
        owner: str = "console",
    ) -> AppFault:
        method = full_method(service_name, method)
        request = admin_pb2.SetFaultRequest(
            fault=admin_pb2.Fault(
                method=method,
                error_rate=error_rate,
                code=code.upper(),
                delay_s=delay_s,
                pushback_ms=pushback_ms,
            )
        )
        try:
            for instance in self._instances(service_name):
                listing = self._stub(instance).SetFault(
                    request, timeout=ADMIN_TIMEOUT_S, metadata=self._metadata
                )
        except grpc.RpcError as err:
            raise FaultError(f"{service_name} {method}: {_rpc_error(err)}") from None
        made = next(f for f in listing.faults if f.method == method)
        fault = AppFault(
            service_name, method, made.error_rate, made.code, made.delay_s, made.pushback_ms, owner
        )
        with self._lock:
            owners = self._owners()
            owners[f"{service_name} {method}"] = {"owner": owner, "key": _fault_key(fault)}
            self._save_owners(owners)
        return fault

    def clear_app_fault(self, service_name: str, method: str = "") -> None:
        """Clear one method's fault, or every fault of the service when `method` is empty."""
        method = full_method(service_name, method) if method else ""
        try:
            for instance in self._instances(service_name):
                self._stub(instance).ClearFaults(
                    admin_pb2.ClearFaultsRequest(method=method),
                    timeout=ADMIN_TIMEOUT_S,
                    metadata=self._metadata,
                )
        except grpc.RpcError as err:
            raise FaultError(f"{service_name}: {_rpc_error(err)}") from None

    # Everything -------------------------------------------------------------------------

    def reset(self) -> list[str]:
        """Every toxic removed, every proxy enabled, every app fault cleared; returns what
        could not be reached (the rest is reset regardless)."""
        missed: list[str] = []
        if self.client is not None:
            try:
                self.client.reset()
            except ToxiproxyError as err:
                missed.append(f"Toxiproxy: {err}")
        for name in sorted({replica_of(n) for n in self.admin}):
            try:
                self.clear_app_fault(name)
            except FaultError as err:
                missed.append(str(err))
        with self._lock:
            self._save_owners({})
        return missed


def _rpc_error(err: grpc.RpcError) -> str:
    code = err.code() if isinstance(err, grpc.Call) else None
    details = err.details() if isinstance(err, grpc.Call) else str(err)
    return f"{code.name if code else 'ERROR'}: {details}"
