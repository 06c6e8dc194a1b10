"""`mesh up --xds` on a shared host (review round 4, item 4): the control plane's admin wants
the run's admin token and a loopback Host, so another local process can neither read the
config nor re-point the gateway's payment cluster at a relay; the tooling, which reads the
token from mesh.json, still can. The token reaches mesh-xds through its environment only."""

from __future__ import annotations

import http.client
import json
import uuid
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports, free_ports
from grpc_resilience_mesh.launch.xds_faults import PlaneAdmin
from grpc_resilience_mesh.launch.xds_plane import XdsPlane
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.support.peers import peer_binary

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def ask(
    admin: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> int:
    host, port = admin.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(method, path, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def checkout(gateway: str, api_key: str | None) -> int:
    with grpc.insecure_channel(gateway) as channel:
        reply = gateway_pb2_grpc.GatewayStub(channel).Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0001", amount_cents=100, currency="USD", idempotency_key=uuid.uuid4().hex
            ),
            timeout=10,
            metadata=(("authorization", f"Bearer {api_key}"),),
        )
    return int(reply.status)


def test_without_the_token_the_plane_is_neither_read_nor_repointed(tmp_path: Path) -> None:
    state_dir = (tmp_path / "var").resolve()
    ads_port, admin_port = free_ports(2)
    plane = XdsPlane(state_dir, ads_port, admin_port, binary=peer_binary("mesh-xds"))
    with Mesh(state_dir=state_dir, ports=Ports.auto(), policy="full", xds=plane) as mesh:
        state = mesh.state
        assert state is not None and state.admin_token
        owner = PlaneAdmin(plane.admin_url, state.admin_token)
        before = owner.config()
        relayed = json.loads(json.dumps(before))
        relayed["nodes"]["gateway"]["payment"]["endpoints"] = ["127.0.0.1:9"]
        loopback = {"Host": f"127.0.0.1:{admin_port}"}
        rebound = {"Host": "rebound.example", "Authorization": f"Bearer {state.admin_token}"}
        answers = {
            "PUT": ask(plane.admin_url, "PUT", "/config", loopback, json.dumps(relayed).encode()),
            "GET /config": ask(plane.admin_url, "GET", "/config", loopback),
            "GET /resources": ask(plane.admin_url, "GET", "/resources?node=gateway", loopback),
            "rebound Host": ask(plane.admin_url, "GET", "/config", rebound),
            "/healthz": ask(plane.admin_url, "GET", "/healthz", loopback),
        }
        assert answers == {
            "PUT": 401,
            "GET /config": 401,
            "GET /resources": 401,
            "rebound Host": 403,
            "/healthz": 200,
        }
        assert owner.config() == before
        assert checkout(state.gateway, state.api_key) == payment_pb2.CHARGE_STATUS_SUCCEEDED
        argv = Path(f"/proc/{state.pids['xds']}/cmdline").read_bytes()
        assert state.admin_token.encode() not in argv
