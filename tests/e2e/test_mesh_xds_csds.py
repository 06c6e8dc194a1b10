"""The differential: what mesh-xds sends each xDS client (its GET /resources?node=) against what
that client reports over CSDS (gRFC A40, served on the gateway's and recommendation's admin
ports): every listener, cluster and endpoint assignment ACKED, at the plane's version, and as
the plane sent it, field for field, for a policy that uses every xDS part the plane can say
(A44 retry, A32 max_requests, A31 timeout, A50 outlier detection, A33 faults).

A31's timeout is on recommendation's route to profile, not on the gateway's to recommendation:
grpcio 1.85 fails every call of a route with max_stream_duration at once in some processes
(docs/patterns/xds.md), and a gateway doing so never called a recommendation replica, whose
channel to profile then never subscribed (CI: "recommendation holding 3: not reached"). On
recommendation's route, a replica's failed calls still subscribe its channel.

CSDS shows a resource as received, not what gRPC made of it, so a field the client ignores is
in both sides alike: the gRFCs, not this test, say which (docs/patterns/xds.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.console.csds import Resource, fetch
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports, free_ports
from grpc_resilience_mesh.launch.xds_config import XDS_CALLERS
from grpc_resilience_mesh.launch.xds_faults import PlaneAdmin
from grpc_resilience_mesh.launch.xds_plane import XdsPlane
from grpc_resilience_mesh.services.topology import replica_of
from tests.e2e.test_mesh_xds import home
from tests.support.peers import peer_binary
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

EVERY_PART = """
name: xds-every-part
edges:
  gateway_to_recommendation:
    retry: {max_attempts: 1}
    xds:
      retry: {max_attempts: 3, base_backoff_s: 0.025, max_backoff_s: 0.25,
              retryable_codes: [UNAVAILABLE]}
      max_requests: 20
      outlier: {failure_percentage: 50, request_volume: 10, minimum_hosts: 2,
                interval_s: 1.0, base_ejection_s: 5.0}
      faults:
        - {method: Popular, abort_percent: 5, abort_code: INTERNAL}
        - {delay_percent: 1, delay_s: 0.01}
  recommendation_to_profile:
    xds:
      timeout_s: 1.5
"""


def sent_by_plane(resources: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for kind in ("listeners", "clusters", "endpoints"):
        for item in resources.get(kind) or ():
            out[(kind, item.get("name") or item["clusterName"])] = item
    return out


def held(admin: str, token: str | None, wanted: int) -> list[Resource] | None:
    """The client's resources once it holds `wanted` of them ACKED (channels subscribe lazily)."""
    found = fetch(admin, token)
    return found if sum(r.status == "ACKED" for r in found) >= wanted else None


def compared(
    instance: str,
    admin_addr: str,
    token: str | None,
    resources: dict[str, Any],
    nudge: Callable[[], object],
) -> int:
    """How many resources the plane sends `instance`'s node that its client holds ACKED, at
    the plane's version, as sent (an assertion names the first that is not). `nudge` makes one
    call through the mesh on every poll: a recommendation replica's channel to profile
    subscribes on its first call, and round robin sends a replica none until its subchannel is
    READY, so a fixed number of calls up front may leave one replica never called."""
    sent = sent_by_plane(resources)
    if instance == "gateway":  # payment's channel subscribes on the first checkout only
        sent = {k: v for k, v in sent.items() if "payment" not in k[1]}
    wanted = len(sent)

    last: list[list[Resource]] = [[]]

    def probe() -> list[Resource] | None:
        nudge()
        last[0] = fetch(admin_addr, token)
        return last[0] if sum(r.status == "ACKED" for r in last[0]) >= wanted else None

    try:
        got = wait_until(probe, 15, f"{instance} holding {wanted}", 0.2)
    except AssertionError as err:
        seen = [(r.kind, r.name, r.status, r.version, r.error) for r in last[0]]
        raise AssertionError(f"{err}; it holds {seen}") from None
    assert got is not None
    by_key = {(r.kind, r.name): r for r in got}
    for key, resource in sent.items():
        mine = by_key[key]
        assert (mine.status, mine.error) == ("ACKED", ""), (instance, key)
        assert mine.version == resources["version"], (instance, key)
        assert mine.config == resource, (instance, key)
    return wanted


def test_every_xds_client_acked_what_the_plane_sends_it_as_sent(tmp_path: Path) -> None:
    state_dir = (tmp_path / "var").resolve()
    policy = tmp_path / "xds-every-part.yaml"
    policy.write_text(EVERY_PART)
    ads_port, admin_port = free_ports(2)
    plane = XdsPlane(state_dir, ads_port, admin_port, binary=peer_binary("mesh-xds"))
    mesh = Mesh(state_dir=state_dir, ports=Ports.auto(), policy=str(policy), xds=plane)
    counts: dict[str, int] = {}
    with mesh:
        assert mesh.state is not None
        state = mesh.state
        admin = PlaneAdmin(plane.admin_url, state.admin_token)
        with grpc.insecure_channel(state.gateway) as channel:
            for instance, addrs in sorted(state.services.items()):
                node = replica_of(instance)
                if node not in XDS_CALLERS:
                    continue
                resources = admin.resources(node)
                counts[instance] = compared(
                    instance,
                    addrs["admin"],
                    state.admin_token,
                    resources,
                    lambda: home(channel, state.api_key),
                )
    assert counts == {"gateway": 6, "recommendation": 3, "recommendation-2": 3}
