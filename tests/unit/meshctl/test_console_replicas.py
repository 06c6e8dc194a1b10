"""What the console and `mesh status` say about replicas, the job edges (Redis, SMTP), the
policy in force and refusals: each from the counters a real scrape holds."""

from __future__ import annotations

from grpc_resilience_mesh.client.counters import Key, Snapshot
from grpc_resilience_mesh.console.job_edges import job_edge_stats
from grpc_resilience_mesh.console.metrics_view import MetricsWindow
from grpc_resilience_mesh.console.policy_view import policy_label
from grpc_resilience_mesh.console.replica_view import replica_views

GET = "/mesh.v1.ProfileService/GetProfile"
DIALLED = {
    "gateway_to_profile": "127.0.0.1:26052",
    "gateway_to_profile-2": "127.0.0.1:26062",
    "recommendation_to_profile": "127.0.0.1:26152",
    "recommendation_to_profile-2": "127.0.0.1:26162",
}


def key(process: str, name: str, **labels: str) -> Key:
    return (process, name, frozenset(labels.items()))


def test_each_replica_has_its_own_rates_ejection_and_toxics() -> None:
    growth = Snapshot(
        {
            key("profile", "mesh_server_calls_total", method=GET, code="OK"): 50.0,
            key("profile-2", "mesh_server_calls_total", method=GET, code="OK"): 2.0,
            key("profile-2", "mesh_server_calls_total", method=GET, code="UNAVAILABLE"): 8.0,
        }
    )
    now = Snapshot(
        {
            key(
                "gateway", "mesh_replica_ejected", dependency="profile", replica="127.0.0.1:26052"
            ): 0.0,
            key(
                "gateway", "mesh_replica_ejected", dependency="profile", replica="127.0.0.1:26062"
            ): 1.0,
        }
    )
    proxies = {
        "gateway_to_profile-2": {
            "enabled": True,
            "toxics": [{"name": "cli_latency", "type": "latency", "attributes": {"latency": 500}}],
        },
        "recommendation_to_profile-2": {"enabled": False, "toxics": []},
    }
    views = {v.name: v for v in replica_views(now, growth, 5.0, proxies, DIALLED)}
    assert sorted(views) == ["profile", "profile-2", "recommendation", "recommendation-2"]
    one, two = views["profile"], views["profile-2"]
    assert (one.calls_per_s, one.error_rate) == (10.0, 0.0)
    assert (two.calls_per_s, two.error_rate) == (2.0, 0.8)
    assert one.ejection == {"gateway": "in"} and two.ejection == {"gateway": "ejected"}
    by_proxy = {p.name: p for p in two.proxies}
    assert by_proxy["gateway_to_profile-2"].toxics == ["latency latency=500"]
    assert not by_proxy["recommendation_to_profile-2"].enabled
    assert all(not p.toxics and p.enabled for p in one.proxies)  # replica 1 is untouched
    assert views["recommendation"].ejection == {}  # no caller reports ejection for it


def test_redis_and_smtp_edges_count_the_receipt_jobs() -> None:
    growth = Snapshot(
        {
            key("payment", "mesh_jobs_enqueued_total", queue="receipts"): 10.0,
            key(
                "notification", "mesh_jobs_duration_seconds_count", queue="receipts", outcome="ok"
            ): 8.0,
            key(
                "notification",
                "mesh_jobs_duration_seconds_count",
                queue="receipts",
                outcome="transient",
            ): 2.0,
            key(
                "notification",
                "mesh_jobs_duration_seconds_bucket",
                queue="receipts",
                outcome="ok",
                le="0.01",
            ): 8.0,
            key(
                "notification",
                "mesh_jobs_duration_seconds_bucket",
                queue="receipts",
                outcome="ok",
                le="+Inf",
            ): 8.0,
        }
    )
    assert job_edge_stats(growth, 2.0, "payment", "redis").calls_per_s == 5.0
    assert job_edge_stats(growth, 2.0, "notification", "redis").calls_per_s == 5.0
    smtp = job_edge_stats(growth, 2.0, "notification", "smtp")
    assert (smtp.calls_per_s, smtp.error_rate) == (5.0, 0.2)
    assert smtp.p50_ms is not None and 0 < smtp.p50_ms <= 10.0


def test_client_throttling_is_an_edge_figure() -> None:
    window = MetricsWindow({}, window_s=5.0)
    window.add(0.0, Snapshot())
    throttled = key("gateway", "mesh_client_throttled_total", dependency="profile", method=GET)
    window.add(5.0, Snapshot({throttled: 15.0}))
    assert window.edge("gateway", "profile").throttled_per_s == 3.0


def test_the_policy_named_is_the_one_the_services_report() -> None:
    assert policy_label({"gateway": "retry-only", "profile": "retry-only"}, "full") == "retry-only"
    mixed = policy_label({"gateway": "retry-only", "profile": "full"}, "full")
    assert mixed == "mixed (gateway retry-only, profile full)"
    assert policy_label({}, "full") == "full"  # none answered: what the mesh started with


def test_the_edge_panel_has_its_callers_fates_per_second() -> None:
    window = MetricsWindow({}, window_s=5.0)
    window.add(0.0, Snapshot())
    home = "/mesh.v1.Gateway/GetHome"
    ok = key("gateway", "mesh_request_fates_total", method=home, fate="ok")
    checkout = "/mesh.v1.Gateway/Checkout"
    shed = key("gateway", "mesh_request_fates_total", method=checkout, fate="shed(payment:limit)")
    other = key("profile", "mesh_request_fates_total", method=GET, fate="ok")  # not the caller
    window.add(5.0, Snapshot({ok: 40.0, shed: 10.0, other: 99.0}))
    assert window.edge("gateway", "profile").fates_per_s == {"ok": 8.0, "shed(payment:limit)": 2.0}
