"""The console's card 'xDS clients (CSDS)' as `/api/state` carries it under `mesh up --xds`:
per xDS client process (recommendation-2 too) the names it holds by kind, the versions it ACKed,
and each resource it did not ACK with its status and the client's own error; a client that does
not answer is named with why; a service that is no xDS client is not asked; without xDS there is
no card. The clients are real grpc.aio admin servers behind the admin token, answering CSDS as a
client holding a NACKed listener does (the drawing is console.js's drawCsds)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
from envoy.admin.v3.config_dump_shared_pb2 import ClientResourceStatus, UpdateFailureState
from envoy.config.cluster.v3.cluster_pb2 import Cluster
from envoy.config.listener.v3.listener_pb2 import Listener
from envoy.service.status.v3 import csds_pb2, csds_pb2_grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.server import Console
from grpc_resilience_mesh.services.runtime.admin_auth import AdminTokenLayer
from grpc_resilience_mesh.services.runtime.server_chain import ServerChain

TOKEN = "admin-token-for-csds"
LISTENER = "type.googleapis.com/envoy.config.listener.v3.Listener"
CLUSTER = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
ENDPOINTS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
NACK = (
    "xDS response validation errors: [resource index 1: payment: INVALID_ARGUMENT: "
    "field:api_listener error:no route config]"
)


def held(
    type_url: str,
    name: str,
    version: str,
    status: str,
    error: str = "",
    resource: Message | None = None,
) -> Message:
    """One resource as a client's CSDS reports it (a NACK's error as gRPC fills error_state)."""
    fields: dict[str, Any] = {
        "type_url": type_url,
        "name": name,
        "version_info": version,
        "client_status": ClientResourceStatus.Value(status),
    }
    if resource is not None:
        fields["xds_config"] = any_pb2.Any()
        fields["xds_config"].Pack(resource)
    if error:
        fields["error_state"] = UpdateFailureState(details=error, version_info="4")
    item: Message = csds_pb2.ClientConfig.GenericXdsConfig(**fields)
    return item


class CannedCsds(csds_pb2_grpc.ClientStatusDiscoveryServiceServicer):  # type: ignore[misc]
    """A client's CSDS answering what it holds, and counting who asked."""

    def __init__(self, resources: list[Message]) -> None:
        self.resources = resources
        self.asked = 0

    async def FetchClientStatus(
        self, request: csds_pb2.ClientStatusRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> csds_pb2.ClientStatusResponse:
        self.asked += 1
        client = csds_pb2.ClientConfig(generic_xds_configs=self.resources)
        return csds_pb2.ClientStatusResponse(config=[client])


GATEWAY = CannedCsds(
    [
        held(LISTENER, "profile", "3", "ACKED", resource=Listener(name="profile")),
        held(CLUSTER, "profile", "3", "ACKED", resource=Cluster(name="profile")),
        held(ENDPOINTS, "profile", "3", "ACKED"),
        held(LISTENER, "payment", "", "NACKED", error=NACK),
    ]
)
RECOMMENDATION = CannedCsds(
    [
        held(LISTENER, "profile", "2", "ACKED"),
        held(CLUSTER, "profile", "2", "ACKED"),
        held(ENDPOINTS, "profile", "", "REQUESTED"),
    ]
)
PAYMENT = CannedCsds([held(LISTENER, "redis", "9", "ACKED")])


async def admin_server(csds: CannedCsds) -> tuple[grpc.aio.Server, str]:
    """A service's admin port serving `csds`, behind the admin token as mesh up runs it."""
    server = grpc.aio.server(interceptors=[ServerChain([AdminTokenLayer(TOKEN)])])
    csds_pb2_grpc.add_ClientStatusDiscoveryServiceServicer_to_server(csds, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


def closed_port() -> str:
    """A loopback address nothing listens on: a client that does not answer."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def plane() -> Iterator[str]:
    """mesh-xds's admin HTTP serving a config without faults (the console reads its faults)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"nodes": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
async def admin_ports() -> AsyncIterator[dict[str, str]]:
    """Admin addresses by instance, as mesh.json lists them."""
    started = [await admin_server(c) for c in (GATEWAY, RECOMMENDATION, PAYMENT)]
    try:
        yield {
            "gateway": started[0][1],
            "recommendation": started[1][1],
            "recommendation-2": closed_port(),
            "payment": started[2][1],
        }
    finally:
        for server, _ in started:
            await server.stop(0)


def api_state(tmp_path: Path, admin: dict[str, str], extra: dict[str, str]) -> dict[str, Any]:
    """What GET /api/state answers (as JSON, the way the route sends it)."""
    state = MeshState(
        gateway="127.0.0.1:1",
        toxiproxy=None,
        services={name: {"admin": addr} for name, addr in admin.items()},
        proxies={},
        pids={},
        policy="unprotected",
        state_dir=str(tmp_path),
        extra=extra,
        admin_token=TOKEN,
    )
    console = Console(state, reports_dir=tmp_path / "reports")
    try:
        found: dict[str, Any] = json.loads(json.dumps(console.get("/api/state", {})))
        return found
    finally:
        console.close()


async def test_the_card_names_what_each_client_acked_and_nacked_and_who_did_not_answer(
    tmp_path: Path, admin_ports: dict[str, str], plane: str
) -> None:
    state = await asyncio.to_thread(api_state, tmp_path, admin_ports, {"xds_admin": plane})
    assert state["errors"] == []
    assert state["csds"] == {
        "gateway": {
            "resources": {
                "clusters": ["profile"],
                "endpoints": ["profile"],
                "listeners": ["payment", "profile"],
            },
            "versions": ["3"],
            "not_acked": [
                {"kind": "listeners", "name": "payment", "status": "NACKED", "error": NACK}
            ],
        },
        "recommendation": {
            "resources": {
                "clusters": ["profile"],
                "endpoints": ["profile"],
                "listeners": ["profile"],
            },
            "versions": ["2"],
            "not_acked": [
                {"kind": "endpoints", "name": "profile", "status": "REQUESTED", "error": ""}
            ],
        },
        "recommendation-2": {"error": f"CSDS at {admin_ports['recommendation-2']}: UNAVAILABLE"},
    }
    assert PAYMENT.asked == 0  # a server only, no xDS client: not in the card, not asked


async def test_without_xds_there_is_no_card_and_no_client_is_asked(
    tmp_path: Path, admin_ports: dict[str, str]
) -> None:
    before = GATEWAY.asked
    state = await asyncio.to_thread(api_state, tmp_path, admin_ports, {})
    assert state["csds"] is None
    assert GATEWAY.asked == before
