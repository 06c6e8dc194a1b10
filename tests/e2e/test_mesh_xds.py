"""`mesh up --xds` as processes: the gateway and recommendation find their dependencies
through gRPC's xDS client and the mesh's control plane (mesh-xds), and a policy change the
launcher takes on reaches their calls within a second, with no process restarted; restarted
out of xDS, they dial their proxies again."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports, free_ports
from grpc_resilience_mesh.launch.xds_plane import XdsPlane
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.support.peers import peer_binary

pytestmark = pytest.mark.e2e

ABORT_RECOMMEND = """
name: xds-abort
edges:
  gateway_to_recommendation:
    xds:
      faults: [{method: Recommend, abort_percent: 100, abort_code: UNAVAILABLE}]
"""


def home(channel: grpc.Channel, api_key: str | None) -> gateway_pb2.GetHomeResponse:
    md = (("authorization", f"Bearer {api_key}"),)
    request = gateway_pb2.GetHomeRequest(user_id="u-0001")
    reply: gateway_pb2.GetHomeResponse = gateway_pb2_grpc.GatewayStub(channel).GetHome(
        request, timeout=5, metadata=md
    )
    return reply


def test_mesh_up_xds_answers_and_a_pushed_fault_degrades_home_within_a_second(
    tmp_path: Path,
) -> None:
    state_dir = (tmp_path / "var").resolve()
    ads_port, admin_port = free_ports(2)
    plane = XdsPlane(state_dir, ads_port, admin_port, binary=peer_binary("mesh-xds"))
    mesh = Mesh(state_dir=state_dir, ports=Ports.auto(), policy="full", xds=plane)
    with mesh:
        assert mesh.state is not None and mesh.state.extra["xds_ads"] == plane.ads
        pids = dict(mesh.state.pids)
        with grpc.insecure_channel(mesh.state.gateway) as channel:
            first = home(channel, mesh.state.api_key)
            assert first.profile.user_id == "u-0001" and list(first.degraded) == []
            policy = tmp_path / "xds-abort.yaml"
            policy.write_text(ABORT_RECOMMEND)
            changed = time.monotonic()
            mesh.record_policy(str(policy))  # the launcher rewrites xds/xds.json
            degraded: list[gateway_pb2.Degradation] = []
            for _ in range(200):
                degraded = list(home(channel, mesh.state.api_key).degraded)
                if degraded or time.monotonic() - changed > 5:
                    break
                time.sleep(0.01)
            took_s = time.monotonic() - changed
            assert mesh.state.pids == pids  # nothing restarted: the push did it
            # Out of xDS (what the runner does for the variant after an xds one): the callers
            # dial their proxies again, so the fault that lived in xDS is gone with it.
            mesh.restart_services(str(policy), xds=False)
            assert "xds" not in {p.name for p in mesh.procs} and mesh.state is not None
            assert "xds_ads" not in mesh.state.extra
            assert list(home(channel, mesh.state.api_key).degraded) == []
    assert [(d.part, d.served_by, d.code) for d in degraded] == [
        ("recommendations", "popular", "UNAVAILABLE")
    ]
    assert took_s < 1.0, f"the policy took {took_s:.3f} s to reach the gateway's calls"
