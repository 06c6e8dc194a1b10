"""Events become Prometheus samples with stable names and labels, in a registry of our own."""

from __future__ import annotations

import asyncio
import urllib.request

from prometheus_client import CollectorRegistry

from grpc_aio_resilience import events as ev
from grpc_aio_resilience import from_dict
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics

M = "/mesh.v1.ProfileService/GetProfile"


def test_events_become_counters_and_gauges() -> None:
    registry = CollectorRegistry()
    metrics = MeshMetrics(registry, "gateway")
    bus = ev.EventBus()
    bus.subscribe(metrics.listener)
    bus.emit(ev.AttemptFinished("profile", M, 1, "UNAVAILABLE", 0.01, 0.2))
    bus.emit(ev.RetryScheduled("profile", M, 1, "UNAVAILABLE", 0.2, 0.2))
    bus.emit(ev.AttemptFinished("profile", M, 2, "OK", 0.01, None))
    bus.emit(ev.CallFinished("profile", M, "OK", 2, 0.3))
    bus.emit(ev.BreakerStateChanged("profile", M, ev.BreakerState.CLOSED, ev.BreakerState.OPEN, 2))
    bus.emit(ev.BreakerRejected("profile", M, ev.BreakerState.OPEN, 1.5))
    bus.emit(ev.BulkheadRejected("profile", M, 4, 0.0))
    bus.emit(ev.FallbackServed("recommendation", "/x/Recommend", "popular", "UNAVAILABLE", "r"))
    bus.emit(ev.ServerCallFinished("gateway", "/x/GetHome", "OK", 0.01))
    bus.emit(ev.CallShed("gateway", "/x/GetHome", 64, 0.2))
    bus.emit(ev.CallShed("gateway", "/x/GetHome", 3, 0.2, "deadline", 64, "SHEDDABLE", 0.0))
    bus.emit(ev.ConcurrencyLimitChanged("gateway", "vegas", 17))
    bus.emit(ev.PoolWorkDone("gateway", 0.004, 0.02, 3, 5))
    bus.emit(ev.FaultInjected("gateway", "/x/GetHome", "INTERNAL", 0.0))

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    dm = {"dependency": "profile", "method": M}
    assert value("mesh_client_attempts_total", **dm, outcome="UNAVAILABLE") == 1
    assert value("mesh_client_attempts_total", **dm, outcome="OK") == 1
    assert value("mesh_client_calls_total", **dm, outcome="OK") == 1
    assert value("mesh_client_retries_total", **dm, reason="UNAVAILABLE") == 1
    assert value("mesh_pushbacks_honoured_total", **dm) == 1
    assert value("mesh_breaker_state", **dm) == 2
    assert value("mesh_breaker_rejections_total", **dm) == 1
    assert value("mesh_bulkhead_rejections_total", **dm) == 1
    assert (
        value(
            "mesh_fallbacks_total",
            dependency="recommendation",
            method="/x/Recommend",
            served_by="popular",
        )
        == 1
    )
    assert value("mesh_server_calls_total", method="/x/GetHome", code="OK") == 1
    assert value("mesh_server_shed_total", method="/x/GetHome", reason="limit") == 1
    assert value("mesh_server_shed_total", method="/x/GetHome", reason="deadline") == 1
    assert value("mesh_server_concurrency_limit", service="gateway") == 17
    assert value("mesh_pool_in_use", service="gateway") == 3
    assert value("mesh_pool_queue_length", service="gateway") == 5
    assert value("mesh_pool_wait_seconds_count", service="gateway") == 1
    assert value("mesh_faults_injected_total", method="/x/GetHome", code="INTERNAL") == 1
    assert value("mesh_service_info", service="gateway") == 1


async def test_two_registries_do_not_collide_and_http_serves_one() -> None:
    first = MeshMetrics(CollectorRegistry(), "a")
    MeshMetrics(CollectorRegistry(), "b")
    port = first.start_http("127.0.0.1:0")
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        with await asyncio.to_thread(urllib.request.urlopen, url, timeout=5) as reply:
            body = reply.read().decode()
        assert 'mesh_service_info{service="a"} 1.0' in body
    finally:
        await first.stop_http()


def test_an_open_breaker_nobody_calls_reads_half_open_once_its_open_time_passes() -> None:
    from grpc_aio_resilience.breaker import BreakerStateMachine
    from grpc_aio_resilience.edge_policy import BreakerPolicy
    from tests.support.fake_clock import FakeClock

    clock = FakeClock()
    registry = CollectorRegistry()
    metrics = MeshMetrics(registry, "gateway", clock=clock)
    bus = ev.EventBus()
    bus.subscribe(metrics.listener)
    policy = from_dict(BreakerPolicy, {"consecutive_failures": 2, "open_s": 2.0})
    breaker = BreakerStateMachine(policy, clock, bus, "recommendation", "/x/Popular")
    for _ in range(2):
        breaker.record_failure(breaker.acquire())
    labels = {"dependency": "recommendation", "method": "/x/Popular"}

    def state() -> float | None:
        return registry.get_sample_value("mesh_breaker_state", labels)

    assert state() == 2
    clock.advance(1.9)
    assert state() == 2
    clock.advance(0.2)  # past open_s, and no call has touched the breaker
    assert state() == 1
    assert (
        registry.get_sample_value(
            "mesh_breaker_transitions_total", {**labels, "to_state": "half_open"}
        )
        is None
    ), "reading the gauge is not a transition"
    breaker.record_success(breaker.acquire())  # the probe
    assert state() == 0


def test_a_new_policy_reports_its_fresh_breakers_closed() -> None:
    registry = CollectorRegistry()
    metrics = MeshMetrics(registry, "gateway")
    metrics.listener(
        ev.BreakerStateChanged("profile", M, ev.BreakerState.CLOSED, ev.BreakerState.OPEN, 30)
    )
    dm = {"dependency": "profile", "method": M}
    assert registry.get_sample_value("mesh_breaker_state", dm) == 2
    metrics.breakers_replaced()
    assert registry.get_sample_value("mesh_breaker_state", dm) == 0
