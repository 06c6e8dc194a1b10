"""Bulkhead occupancy, retry budget tokens, breaker probe times and ejected replicas are read
at scrape time."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry

from grpc_aio_resilience import events as ev
from grpc_aio_resilience.breaker import BreakerStrategy
from grpc_aio_resilience.bulkhead import Bulkhead
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from grpc_aio_resilience.outlier_router import ReplicaRouter
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_aio_resilience.retry import Retry
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from tests.support.fake_clock import FakeClock

M = "/mesh.v1.RecommendationService/Recommend"


def test_scrape_reads_bulkhead_budget_and_breaker_probe_without_moving_the_breaker() -> None:
    clock = FakeClock()
    bus = ev.EventBus()
    moves: list[ev.Event] = []
    bus.subscribe(moves.append)
    policy = load_policy("full").edge("gateway_to_recommendation")
    pipeline = build_pipeline(
        policy, dependency="recommendation", bus=bus, clock=clock, rng=random.Random(1)
    )
    registry = CollectorRegistry()
    metrics = MeshMetrics(registry, "gateway", clock=clock)
    metrics.watch_pipelines(lambda: {"recommendation": pipeline})

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"dependency": "recommendation", **labels})

    bulkhead = next(s for s in pipeline.strategies if isinstance(s, Bulkhead))
    retry = next(s for s in pipeline.strategies if isinstance(s, Retry))
    breaker = next(s for s in pipeline.strategies if isinstance(s, BreakerStrategy))
    assert retry.budget is not None
    bulkhead.in_flight = 3
    retry.budget.record_failure()
    assert value("mesh_bulkhead_in_use") == 3
    assert value("mesh_bulkhead_limit") == policy.bulkhead.max_concurrent
    assert value("mesh_retry_budget_max_tokens") == policy.retry.budget.max_tokens
    assert value("mesh_retry_budget_tokens") == policy.retry.budget.max_tokens - 1

    machine = breaker.breaker_for(M)
    assert value("mesh_breaker_probe_in_seconds", method=machine.method) == 0
    for _ in range(policy.breaker.consecutive_failures or 1):
        machine.record_failure(machine.acquire())
    clock.advance(policy.breaker.open_s / 4)
    left = value("mesh_breaker_probe_in_seconds", method=machine.method)
    assert left is not None and abs(left - policy.breaker.open_s * 3 / 4) < 1e-9
    clock.advance(policy.breaker.open_s)
    transitions = len(moves)
    assert value("mesh_breaker_probe_in_seconds", method=machine.method) == 0
    assert len(moves) == transitions  # a scrape never moves the breaker (no half-open event)


def test_a_call_duration_lands_in_the_histogram() -> None:
    registry = CollectorRegistry()
    metrics = MeshMetrics(registry, "gateway")
    metrics.listener(ev.CallFinished("recommendation", M, "OK", 1, 0.3))
    labels = {"dependency": "recommendation", "method": M}
    assert registry.get_sample_value("mesh_client_call_seconds_count", labels) == 1
    assert (
        registry.get_sample_value("mesh_client_call_seconds_bucket", {**labels, "le": "0.25"}) == 0
    )
    assert (
        registry.get_sample_value("mesh_client_call_seconds_bucket", {**labels, "le": "0.5"}) == 1
    )


def test_which_replicas_ejection_keeps_out_is_read_at_scrape_time() -> None:
    clock = FakeClock()
    one, two = "127.0.0.1:26052", "127.0.0.1:26062"
    router = ReplicaRouter(
        "profile",
        [one, two],
        lambda address: None,  # never dialled: no call is sent here
        OutlierPolicy(enabled=True, consecutive_failures=3, base_ejection_s=5.0),
        ev.EventBus(),
        clock,
    )
    registry = CollectorRegistry()
    MeshMetrics(registry, "gateway", clock=clock).watch_replicas(lambda: {"profile": router})

    def ejected(replica: str) -> float | None:
        labels = {"dependency": "profile", "replica": replica}
        return registry.get_sample_value("mesh_replica_ejected", labels)

    assert (ejected(one), ejected(two)) == (0.0, 0.0)
    for _ in range(3):
        router.detector.record(two, failed=True)
    assert (ejected(one), ejected(two)) == (0.0, 1.0)
    clock.advance(5.1)  # the ejection ran out, though no call has come to return it yet
    assert ejected(two) == 0.0
    router.use(OutlierPolicy(enabled=False))  # ejection off: nothing to report
    assert ejected(one) is None and ejected(two) is None
