"""The plane's config as `mesh fault --xds` and the experiments' xds fault change it: one A33
fault per route, who set it kept beside it, the policy's own faults left alone by a reset."""

from __future__ import annotations

from typing import Any

from grpc_resilience_mesh.launch.xds_faults import listed, with_fault, without_faults, xds_edge

RECOMMEND = "/mesh.v1.RecommendationService/Recommend"


def config(*faults: dict[str, Any]) -> dict[str, Any]:
    edge = {"endpoints": ["127.0.0.1:1"], **({"faults": list(faults)} if faults else {})}
    return {"nodes": {"gateway": {"recommendation": edge, "profile": {"endpoints": ["a:1"]}}}}


def faults_of(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = cfg["nodes"]["gateway"]["recommendation"].get("faults", [])
    return found


def test_a_delay_added_to_an_abort_on_the_same_route_makes_one_fault_doing_both() -> None:
    edge = xds_edge("gateway_to_recommendation")
    cfg = with_fault(config(), edge, "Recommend", "mesh fault", abort=(30.0, "UNAVAILABLE"))
    cfg = with_fault(cfg, edge, "Recommend", "experiment", delay=(50.0, 0.2))
    cfg = with_fault(cfg, edge, None, "mesh fault", delay=(100.0, 0.01))
    assert faults_of(cfg) == [
        {
            "path": RECOMMEND,
            "abort_percent": 30.0,
            "abort_code": "UNAVAILABLE",
            "delay_percent": 50.0,
            "delay_s": 0.2,
            "owner": "experiment",
        },
        {"delay_percent": 100.0, "delay_s": 0.01, "owner": "mesh fault"},
    ]
    shown = [(f.edge, f.method, f.abort_code, f.delay_s, f.owner) for f in listed(cfg)]
    assert shown == [
        ("gateway_to_recommendation", "Recommend", "UNAVAILABLE", 0.2, "experiment"),
        ("gateway_to_recommendation", "*", "", 0.01, "mesh fault"),
    ]


def test_a_fault_over_the_policys_own_replaces_it_and_a_reset_leaves_the_policys_alone() -> None:
    edge = xds_edge("gateway_to_recommendation")
    policy = {"path": RECOMMEND, "abort_percent": 10.0, "abort_code": "INTERNAL"}
    every_call = {"delay_percent": 100.0, "delay_s": 0.3}
    cfg = with_fault(config(policy, every_call), edge, "Recommend", "mesh fault", delay=(5, 0.1))
    assert faults_of(cfg)[-1] == {
        "path": RECOMMEND,
        "delay_percent": 5,
        "delay_s": 0.1,
        "owner": "mesh fault",
    }
    cfg, removed = without_faults(cfg)
    assert removed == 1 and faults_of(cfg) == [every_call]
    assert [f.owner for f in listed(cfg)] == ["policy"]


def test_removing_one_route_keeps_the_others() -> None:
    edge = xds_edge("gateway_to_recommendation")
    cfg = with_fault(config(), edge, "Recommend", "mesh fault", abort=(30.0, "UNAVAILABLE"))
    cfg = with_fault(cfg, edge, None, "mesh fault", abort=(1.0, "INTERNAL"))
    cfg, removed = without_faults(cfg, edge, "*")
    assert removed == 1 and [f["path"] for f in faults_of(cfg)] == [RECOMMEND]
    cfg, removed = without_faults(cfg, edge, "Recommend")
    assert removed == 1 and faults_of(cfg) == []
    assert "faults" not in cfg["nodes"]["gateway"]["profile"]  # untouched edges stay as they were
