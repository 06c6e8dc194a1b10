"""`mesh up --xds`'s translation: the edge policy's `xds:` section into the control plane's
file, the callers' bootstraps and environment, and the rules that keep one retry owner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpc_aio_resilience import EdgePolicy, OptionError, from_dict
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.wiring import Security, Wiring
from grpc_resilience_mesh.launch.xds_config import plane_config
from grpc_resilience_mesh.launch.xds_plane import BOOTSTRAP_ENV, XdsPlane
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.policy.loading import load_policy_text
from grpc_resilience_mesh.services.topology import EDGES, Edge, service

POLICY = """
name: xds-test
edges:
  gateway_to_recommendation:
    retry: {max_attempts: 1}
    xds:
      retry: {max_attempts: 3, base_backoff_s: 0.05, max_backoff_s: 0.5,
              retryable_codes: [unavailable]}
      max_requests: 20
      timeout_s: 1.5
      outlier: {failure_percentage: 60, request_volume: 5, interval_s: 0.5}
      faults:
        - {method: Recommend, abort_percent: 30, abort_code: UNAVAILABLE}
        - {delay_percent: 100, delay_s: 0.2}
"""


def addresses(edge: Edge) -> str:
    return "127.0.0.1:1001,127.0.0.1:1002"


def test_the_xds_section_becomes_the_edges_resources_and_other_edges_only_endpoints() -> None:
    config = plane_config(load_policy_text(POLICY, "test.yaml"), addresses)
    assert sorted(config["nodes"]) == ["gateway", "recommendation"]
    assert sorted(config["nodes"]["gateway"]) == ["payment", "profile", "recommendation"]
    edge = config["nodes"]["gateway"]["recommendation"]
    assert edge["endpoints"] == ["127.0.0.1:1001", "127.0.0.1:1002"]
    assert edge["retry"] == {
        "max_attempts": 3,
        "base_backoff_s": 0.05,
        "max_backoff_s": 0.5,
        "retryable_codes": ["UNAVAILABLE"],
    }
    assert edge["max_requests"] == 20 and edge["timeout_s"] == 1.5
    assert edge["outlier"]["failure_percentage"] == 60
    assert edge["outlier"]["request_volume"] == 5 and edge["outlier"]["interval_s"] == 0.5
    path = f"/{service('recommendation').grpc_service}/Recommend"
    assert edge["faults"] == [
        {"path": path, "abort_percent": 30.0, "abort_code": "UNAVAILABLE"},
        {"delay_percent": 100.0, "delay_s": 0.2},
    ]
    assert config["nodes"]["recommendation"]["profile"] == {
        "endpoints": ["127.0.0.1:1001", "127.0.0.1:1002"]
    }


def test_xds_retry_beside_our_retry_is_refused_one_retry_owner() -> None:
    with pytest.raises(OptionError, match="one retry owner"):
        from_dict(EdgePolicy, {"xds": {"retry": {}}})  # our retry's default: 3 attempts
    with pytest.raises(OptionError, match="one retry owner"):
        from_dict(
            EdgePolicy,
            {"retry": {"max_attempts": 1}, "native_retry": {"enabled": True}, "xds": {"retry": {}}},
        )
    one = from_dict(EdgePolicy, {"retry": {"max_attempts": 1}, "xds": {"retry": {}}})
    assert one.xds.retry is not None


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"retry": {"retryable_codes": ["NOT_FOUND"]}}, "NOT_FOUND is not one of CANCELLED"),
        ({"faults": [{"abort_percent": 101}]}, r"101 is not in \[0, 100\]"),
        ({"faults": [{"abort_code": "OK", "abort_percent": 1}]}, "not a gRPC error code"),
        ({"faults": [{"method": "a/b"}]}, "not a method name"),
        ({"faults": [{"delay_percent": 1}, {"abort_percent": 1}]}, "one per method"),
    ],
)
def test_what_xds_cannot_say_is_refused_with_the_reason(
    section: dict[str, object], says: str
) -> None:
    with pytest.raises(OptionError, match=says):
        from_dict(EdgePolicy, {"retry": {"max_attempts": 1}, "xds": section})


def test_an_xds_target_is_an_address_and_a_bad_one_says_the_rule() -> None:
    assert settings.addresses("xds:///payment") == "xds:///payment"
    with pytest.raises(settings.RuleError, match="xds:///NAME"):
        settings.addresses("xds:///")


def test_under_xds_the_callers_dial_xds_targets_with_their_own_bootstrap(tmp_path: Path) -> None:
    plane = XdsPlane(tmp_path, ads_port=7001, admin_port=7002)
    wiring = Wiring(Ports.auto(), tmp_path, False, {}, {}, plane)
    plane.write(load_policy_text(POLICY, "test.yaml"), {e.name: "127.0.0.1:9" for e in EDGES})
    security = Security(None, None, None)
    gateway = wiring.service_env(service("gateway"), "full", security)
    assert gateway["RECOMMENDATION_ADDR"] == "xds:///recommendation"
    assert gateway["PAYMENT_ADDR"] == "xds:///payment"
    boot = json.loads(Path(gateway[BOOTSTRAP_ENV]).read_text())
    assert boot["node"]["id"] == "gateway"
    assert boot["xds_servers"][0]["server_uri"] == "127.0.0.1:7001"
    recommendation = wiring.service_env(service("recommendation"), "full", security)
    assert recommendation["PROFILE_ADDR"] == "xds:///profile"
    payment = wiring.service_env(service("payment"), "full", security)
    assert not payment["REDIS_ADDR"].startswith("xds:") and BOOTSTRAP_ENV not in payment
    # A50's ejections are logged by the callers only (gRPC reports them nowhere else).
    assert gateway["GRPC_TRACE"] == recommendation["GRPC_TRACE"] == "outlier_detection_lb"
    assert "GRPC_TRACE" not in payment
    written = json.loads(plane.config_path.read_text())
    assert written["nodes"]["gateway"]["recommendation"]["max_requests"] == 20


def test_without_the_binary_the_launch_fails_naming_make_peers(tmp_path: Path) -> None:
    plane = XdsPlane(tmp_path, 1, 2, binary=tmp_path / "absent" / "mesh-xds")
    with pytest.raises(LaunchError, match="make peers"):
        plane.args()
