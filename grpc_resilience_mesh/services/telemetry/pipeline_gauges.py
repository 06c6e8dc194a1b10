"""Gauges read from the edges' pipelines when /metrics is scraped, never updated per call.

| metric                           | labels             | value                                  |
|----------------------------------|--------------------|----------------------------------------|
| mesh_breaker_probe_in_seconds    | dependency, method | time until an open breaker's probe     |
| mesh_bulkhead_in_use             | dependency         | calls holding a bulkhead slot now      |
| mesh_bulkhead_limit              | dependency         | the bulkhead's max_concurrent          |
| mesh_retry_budget_tokens         | dependency         | the retry budget's tokens now          |
| mesh_retry_budget_max_tokens     | dependency         | its capacity (retries while > half)    |
| mesh_replica_ejected             | dependency, replica | 1 while outlier ejection keeps the    |
|                                  |                    | replica (its address) out, else 0      |

`mesh_replica_ejected` is reported for every replica of an edge whose outlier ejection is on
(none where it is off, or where the edge has one replica).
A breaker that exists but never moved is reported too (probe 0): the console lists every
method that has a breaker. The scrape runs on the metrics thread; it only reads attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from grpc_aio_resilience import BreakerStrategy, Bulkhead, Pipeline, ReplicaRouter, Retry

PipelinesNow = Callable[[], Mapping[str, Pipeline]]
"""The current pipeline of each outbound edge, by dependency (a policy swap replaces them)."""
RoutersNow = Callable[[], Mapping[str, ReplicaRouter | None]]
"""Each outbound edge's replica router, by dependency (None: one replica, or gRPC balances)."""


class PipelineGauges(Collector):
    """A prometheus collector over the live pipelines of one service."""

    def __init__(self, pipelines: PipelinesNow) -> None:
        self._pipelines = pipelines

    def collect(self) -> Iterator[GaugeMetricFamily]:
        probe = GaugeMetricFamily(
            "mesh_breaker_probe_in_seconds",
            "Seconds until an open breaker admits a probe (0 when not open).",
            labels=["dependency", "method"],
        )
        in_use = GaugeMetricFamily(
            "mesh_bulkhead_in_use", "Calls holding a bulkhead slot.", labels=["dependency"]
        )
        limit = GaugeMetricFamily(
            "mesh_bulkhead_limit", "The bulkhead's concurrency limit.", labels=["dependency"]
        )
        tokens = GaugeMetricFamily(
            "mesh_retry_budget_tokens", "Retry budget tokens now.", labels=["dependency"]
        )
        max_tokens = GaugeMetricFamily(
            "mesh_retry_budget_max_tokens", "Retry budget capacity.", labels=["dependency"]
        )
        for dependency, pipeline in list(self._pipelines().items()):
            for strategy in pipeline.strategies:
                if isinstance(strategy, BreakerStrategy):
                    for method, breaker in list(strategy.breakers.items()):
                        probe.add_metric([dependency, method], breaker.peek()[1])
                elif isinstance(strategy, Bulkhead):
                    in_use.add_metric([dependency], strategy.in_flight)
                    limit.add_metric([dependency], strategy.limit)
                elif isinstance(strategy, Retry) and strategy.budget is not None:
                    tokens.add_metric([dependency], strategy.budget.tokens)
                    max_tokens.add_metric([dependency], strategy.budget.max_tokens)
        yield from (probe, in_use, limit, tokens, max_tokens)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


class ReplicaGauges(Collector):
    """`mesh_replica_ejected` of one service's edges, read from their routers' detectors."""

    def __init__(self, routers: RoutersNow) -> None:
        self._routers = routers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ejected = GaugeMetricFamily(
            "mesh_replica_ejected",
            "1 while outlier ejection keeps the replica out of rotation, else 0.",
            labels=["dependency", "replica"],
        )
        for dependency, router in list(self._routers().items()):
            if router is None or not router.policy.enabled:
                continue
            for replica, out in router.detector.out_now().items():
                ejected.add_metric([dependency, replica], 1.0 if out else 0.0)
        yield ejected

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())
