"""The console's model: an experiment's progress file, latency quantiles and edge figures."""

from __future__ import annotations

import time
from pathlib import Path

from grpc_resilience_mesh.chaos.run.progress_file import ProgressFile
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.console.faults import toxic_owner
from grpc_resilience_mesh.console.metrics_view import MetricsWindow, quantile
from grpc_resilience_mesh.console.view import read_progress

M = "/mesh.v1.RecommendationService/Recommend"


def test_the_runners_progress_is_read_while_fresh_and_gone_once_finished(tmp_path: Path) -> None:
    progress = ProgressFile(tmp_path, every_s=0.0)
    progress.experiment = "provider-outage"
    progress.update("full: fault", 40, 100)
    assert read_progress(tmp_path) is None  # no mesh runs here: nothing written
    (tmp_path / "mesh.json").write_text("{}")
    for code in ("OK", "OK", "UNAVAILABLE"):
        progress.count("full: fault", code)
    progress.update("full: fault", 40, 100)
    assert read_progress(tmp_path) == {
        "experiment": "provider-outage",
        "variant": "full",
        "phase": "fault",
        "done": 40,
        "total": 100,
        "codes": {"OK": 2, "UNAVAILABLE": 1},
    }
    assert read_progress(tmp_path, now_s=time.time() + 60) is None  # a run that died
    progress.finish()
    assert read_progress(tmp_path) is None


def test_quantiles_interpolate_within_prometheus_buckets() -> None:
    buckets = [(0.1, 0.0), (0.25, 100.0), (float("inf"), 100.0)]
    assert quantile(0.5, buckets) == 0.175
    assert abs((quantile(0.99, buckets) or 0) - 0.2485) < 1e-9
    assert quantile(0.5, [(0.1, 0.0), (float("inf"), 0.0)]) is None


def _snap(calls_ok: float, calls_failed: float, state: float, probe: float) -> Snapshot:
    def key(name: str, **labels: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
        return ("gateway", name, frozenset({"dependency": "recommendation", **labels}.items()))

    return Snapshot(
        {
            key("mesh_client_calls_total", method=M, outcome="OK"): calls_ok,
            key("mesh_client_calls_total", method=M, outcome="UNAVAILABLE"): calls_failed,
            key("mesh_breaker_state", method=M): state,
            key("mesh_breaker_probe_in_seconds", method=M): probe,
            key("mesh_bulkhead_in_use"): 3.0,
            key("mesh_bulkhead_limit"): 20.0,
        }
    )


def test_edge_figures_are_rates_over_the_window_and_gauges_now() -> None:
    window = MetricsWindow({}, window_s=5.0)
    window.add(100.0, _snap(10, 0, 0, 0))
    window.add(102.0, _snap(30, 20, 2, 1.5))
    stats = window.edge("gateway", "recommendation")
    assert stats.calls_per_s == 20.0  # (20 more OK + 20 failed) over 2 s
    assert stats.error_rate == 0.5
    assert [(b.state, b.probe_in_s) for b in stats.breakers] == [("open", 1.5)]
    assert (stats.bulkhead_in_use, stats.bulkhead_limit) == (3.0, 20.0)


def test_who_set_a_toxic_is_read_from_its_name() -> None:
    assert toxic_owner("console_latency_downstream") == "console"
    assert toxic_owner("cli_latency_downstream") == "mesh fault"
    assert toxic_owner("exp0_latency_downstream") == "experiment"
    assert toxic_owner("latency_downstream") == "another client"


def _server_snap(shed: float) -> Snapshot:
    def key(process: str, name: str, **labels: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
        return (process, name, frozenset(labels.items()))

    return Snapshot(
        {
            key("recommendation", "mesh_server_in_flight", method=M): 5.0,
            key("recommendation-2", "mesh_server_in_flight", method=M): 2.0,
            key("recommendation", "mesh_server_concurrency_limit", service="recommendation"): 8.0,
            key("recommendation-2", "mesh_server_concurrency_limit", service="recommendation"): 6.0,
            key("recommendation", "mesh_server_shed_total", method=M, reason="limit"): shed,
            key("recommendation", "mesh_server_shed_total", method=M, reason="deadline"): 1.0,
            key("profile", "mesh_server_concurrency_limit", service="profile"): 64.0,
        }
    )


def test_each_service_shows_its_in_flight_against_its_limit_and_its_refusals() -> None:
    from grpc_resilience_mesh.cli.status import server_table

    window = MetricsWindow({}, window_s=10.0)
    window.add(0.0, _server_snap(shed=10.0))
    window.add(2.0, _server_snap(shed=30.0))
    stats = window.server("recommendation")
    assert (stats.in_flight, stats.concurrency_limit) == (7.0, 14.0), "replicas add up"
    assert stats.shed_per_s == 10.0 and stats.shed_by_reason == {"limit": 10.0, "deadline": 0.0}
    assert window.server("profile").concurrency_limit == 64.0
    table = server_table({"servers": [{"name": "recommendation", **vars(stats)}]})
    cells = [next(iter(column.cells)) for column in table.columns]
    assert cells[:4] == ["recommendation", "7", "14", "10.0"]
    assert cells[5] == "limit 10.0"


def test_rates_are_over_the_last_window_whatever_came_before() -> None:
    window = MetricsWindow({}, window_s=5.0)
    t = 0.0
    ok = failed = 0.0
    for _ in range(60):  # a minute with no calls, sampled every second
        window.add(t, _snap(ok, failed, 0, 0))
        t += 1.0
    for _ in range(12):  # then every call fails, 20 a second
        failed += 20
        window.add(t, _snap(ok, failed, 0, 0))
        t += 1.0
    faulted = window.edge("gateway", "recommendation")
    assert (faulted.error_rate, faulted.calls_per_s) == (1.0, 20.0)
    for _ in range(25):  # the fault is gone: every call succeeds
        ok += 20
        window.add(t, _snap(ok, failed, 0, 0))
        t += 1.0
    assert window.edge("gateway", "recommendation").error_rate == 0.0
