"""What each xDS client of a `mesh up --xds` mesh holds, over CSDS (gRFC A40): the gateway's
and recommendation's admin ports serve grpcio-csds's ClientStatusDiscoveryService, and this
reads it: per resource its type, name, the version the client ACKed (or NACKed, with the
error), and the resource as the client received it, as JSON.

CSDS shows a resource as it arrived, not what gRPC made of it: a field gRPC's client ignores
(Envoy's success-rate outlier fields, an endpoint's health status, the cluster's lb_policy
beside its own round_robin) is in the dump unchanged, so which fields were ignored comes from
the gRFCs, never from this dump (docs/patterns/xds.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from envoy.admin.v3.config_dump_shared_pb2 import ClientResourceStatus

# The resource types a dump holds: registered so that their Any fields decode to JSON.
from envoy.config.cluster.v3 import cluster_pb2  # noqa: F401
from envoy.config.endpoint.v3 import endpoint_pb2  # noqa: F401
from envoy.config.listener.v3 import listener_pb2  # noqa: F401
from envoy.extensions.filters.http.fault.v3 import fault_pb2  # noqa: F401
from envoy.extensions.filters.http.router.v3 import router_pb2  # noqa: F401
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # noqa: F401
    http_connection_manager_pb2,
)
from envoy.service.status.v3 import csds_pb2, csds_pb2_grpc
from google.protobuf import json_format

from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import replica_of

KINDS = {
    "type.googleapis.com/envoy.config.listener.v3.Listener": "listeners",
    "type.googleapis.com/envoy.config.cluster.v3.Cluster": "clusters",
    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": "endpoints",
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration": "routes",
}
"""The plane's GET /resources keys, by the type URL CSDS names."""


@dataclass(frozen=True)
class Resource:
    """One resource an xDS client holds."""

    kind: str
    name: str
    version: str
    status: str
    error: str
    """The client's reason when it NACKed (or an earlier update failed), else ""."""
    config: dict[str, Any]
    """The resource as the client received it (proto3 JSON), {} when it has none."""


def fetch(admin_addr: str, admin_token: str | None, timeout_s: float = 2.0) -> list[Resource]:
    """Every resource the client at `admin_addr` (a service's admin port) reports."""
    with grpc.insecure_channel(admin_addr) as channel:
        stub = csds_pb2_grpc.ClientStatusDiscoveryServiceStub(channel)
        reply = stub.FetchClientStatus(
            csds_pb2.ClientStatusRequest(), timeout=timeout_s, metadata=admin_metadata(admin_token)
        )
    out = []
    for client in reply.config:
        for item in client.generic_xds_configs:
            config = (
                json_format.MessageToDict(item.xds_config) if item.HasField("xds_config") else {}
            )
            config.pop("@type", None)
            out.append(
                Resource(
                    KINDS.get(item.type_url, item.type_url.rsplit(".", 1)[-1]),
                    item.name,
                    item.version_info,
                    ClientResourceStatus.Name(item.client_status),
                    item.error_state.details if item.HasField("error_state") else "",
                    config,
                )
            )
    return out


def summary(resources: list[Resource]) -> dict[str, Any]:
    """A short dump of one client: its resources by kind, the versions it ACKed, and every
    resource not ACKED with its status and error."""
    by_kind: dict[str, list[str]] = {}
    for r in resources:
        by_kind.setdefault(r.kind, []).append(r.name)
    return {
        "resources": {kind: sorted(names) for kind, names in sorted(by_kind.items())},
        "versions": sorted({r.version for r in resources if r.status == "ACKED"}),
        "not_acked": [
            {"kind": r.kind, "name": r.name, "status": r.status, "error": r.error}
            for r in resources
            if r.status != "ACKED"
        ],
    }


def summary_line(client: str, found: dict[str, Any]) -> str:
    """`gateway: ACKED v12: listeners payment, profile ...; 1 NACKED (why)`, for `mesh status`."""
    kinds = "; ".join(f"{kind} {', '.join(names)}" for kind, names in found["resources"].items())
    versions = ", ".join(found["versions"]) or "none"
    line = f"{client}: ACKED version {versions}: {kinds or 'no resources'}"
    for bad in found["not_acked"]:
        line += f"; [red]{bad['kind']} {bad['name']} {bad['status']}[/red]"
        if bad["error"]:
            line += f" ({bad['error']})"
    return line


def client_dumps(
    admin: dict[str, str], callers: tuple[str, ...], admin_token: str | None
) -> dict[str, dict[str, Any]]:
    """Each xDS client process (by instance name: recommendation-2 too) and its short dump,
    or {"error": why} for one that does not answer."""
    out: dict[str, dict[str, Any]] = {}
    for instance, addr in sorted(admin.items()):
        if replica_of(instance) not in callers:
            continue
        try:
            out[instance] = summary(fetch(addr, admin_token))
        except grpc.RpcError as err:
            code = err.code().name if isinstance(err, grpc.Call) else "ERROR"
            out[instance] = {"error": f"CSDS at {addr}: {code}"}
    return out
