"""The runner's `xds` fault on the real control plane: pushed when it goes on, removed when it
goes off, and by the kill switch (reset_all), which leaves the policy's own A33 fault alone."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.chaos.experiment.model import XdsFault
from grpc_resilience_mesh.chaos.run.faults import Injector
from tests.integration.xds.plane import Plane

pytestmark = pytest.mark.slow
POLICY_FAULT = {"delay_percent": 1, "delay_s": 0.01}


def faults(plane: Plane) -> list[dict[str, object]]:
    config = plane.config()
    found: list[dict[str, object]] = config["nodes"]["gateway"]["recommendation"]["faults"]
    return found


async def test_an_xds_fault_goes_on_and_off_and_the_kill_switch_leaves_the_policys(
    plane: Plane,
) -> None:
    edge = {"endpoints": ["127.0.0.1:1"], "faults": [POLICY_FAULT]}
    plane.put({"nodes": {"gateway": {"recommendation": edge}}})
    injector = Injector(
        None, {}, admin_token=plane.token, xds_admin=lambda: f"http://{plane.admin}"
    )
    fault = XdsFault.model_validate(
        {"type": "xds", "edge": "gateway_to_recommendation", "method": "Recommend",
         "abort_percent": 30, "abort_code": "INTERNAL"}
    )  # fmt: skip
    await injector.set(0, fault, True)
    pushed = faults(plane)
    await injector.set(0, fault, False)
    after_off = faults(plane)
    await injector.set(0, fault, True)
    await injector.reset_all()
    assert pushed == [
        POLICY_FAULT,
        {"path": "/mesh.v1.RecommendationService/Recommend", "abort_percent": 30.0,
         "abort_code": "INTERNAL", "owner": "experiment"},
    ]  # fmt: skip
    assert after_off == faults(plane) == [POLICY_FAULT]
    assert [e.what for e in injector.timeline] == [
        "gateway_to_recommendation Recommend: xds abort 30% INTERNAL"
    ] * 3


async def test_an_xds_fault_without_the_plane_says_what_it_needs() -> None:
    fault = XdsFault.model_validate(
        {"type": "xds", "edge": "gateway_to_profile", "delay_percent": 5, "delay_s": 0.1}
    )
    with pytest.raises(RuntimeError, match="needs the mesh under xDS"):
        await Injector(None, {}).set(0, fault, True)
