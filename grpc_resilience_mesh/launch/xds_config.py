"""What the mesh's xDS control plane (mesh-xds, tools/xds-control) serves, as the JSON file it
reads and watches: per caller (its xDS node id) per dependency (the `xds:///NAME` target),
the replicas' addresses and the edge policy's `xds:` section. Also each caller's bootstrap
file (GRPC_XDS_BOOTSTRAP). Pure: no process, no network."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from grpc_aio_resilience import OutlierPolicy, XdsFaultPolicy, XdsPolicy, to_dict
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.settings import XDS_SCHEME
from grpc_resilience_mesh.services.topology import XDS_CALLERS as XDS_CALLERS
from grpc_resilience_mesh.services.topology import Edge, service, xds_edges


def xds_target(edge: Edge) -> str:
    return f"{XDS_SCHEME}{edge.dependency}"


def plane_config(policy: MeshPolicy, addresses: Callable[[Edge], str]) -> dict[str, Any]:
    """The control plane's file for `policy`; `addresses(edge)` lists its replicas, comma
    separated (what the caller would dial without xDS: Toxiproxy's proxies, unless direct)."""
    nodes: dict[str, dict[str, Any]] = {}
    for edge in xds_edges():
        endpoints = [a.strip() for a in addresses(edge).split(",")]
        grpc_service = service(edge.dependency).grpc_service
        nodes.setdefault(edge.caller, {})[edge.dependency] = edge_resources(
            policy.edge(edge.name).xds, endpoints, grpc_service
        )
    return {"nodes": nodes}


def edge_resources(xds: XdsPolicy, endpoints: list[str], grpc_service: str) -> dict[str, Any]:
    """One edge as mesh-xds reads it (tools/xds-control/config.go's Edge)."""
    out: dict[str, Any] = {"endpoints": endpoints}
    if xds.retry is not None:
        out["retry"] = to_dict(xds.retry)
    if xds.max_requests is not None:
        out["max_requests"] = xds.max_requests
    if xds.outlier is not None:
        out["outlier"] = _outlier(xds.outlier)
    if xds.timeout_s is not None:
        out["timeout_s"] = xds.timeout_s
    if xds.faults:
        out["faults"] = [_fault(f, grpc_service) for f in xds.faults]
    return out


def _outlier(o: OutlierPolicy) -> dict[str, Any]:
    return {
        "interval_s": o.interval_s,
        "base_ejection_s": o.base_ejection_s,
        "max_ejection_s": o.max_ejection_s,
        "max_ejected_percent": round(o.max_ejected_percent),
        "failure_percentage": round(o.failure_percentage),
        "request_volume": o.request_volume,
        "minimum_hosts": o.minimum_hosts,
    }


def _fault(f: XdsFaultPolicy, grpc_service: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if f.method is not None:
        out["path"] = f"/{grpc_service}/{f.method}"
    if f.abort_percent > 0:
        out.update(abort_percent=f.abort_percent, abort_code=f.abort_code)
    if f.delay_percent > 0:
        out.update(delay_percent=f.delay_percent, delay_s=f.delay_s)
    return out


def bootstrap(ads_addr: str, node: str) -> dict[str, Any]:
    """A gRPC xDS bootstrap (gRFC A27): ADS at `ads_addr` in plaintext, node id `node`."""
    return {
        "xds_servers": [
            {
                "server_uri": ads_addr,
                "channel_creds": [{"type": "insecure"}],
                "server_features": ["xds_v3"],
            }
        ],
        "node": {"id": node, "locality": {}},
    }


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """Write atomically: the control plane polls the file and must never read half of it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(document, indent=2, sort_keys=True))
    os.replace(tmp, path)
