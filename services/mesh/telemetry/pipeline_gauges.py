"""Gauges read from the edges' pipelines when /metrics is scraped, never updated per call.

| metric                           | labels             | value                                  |
|----------------------------------|--------------------|----------------------------------------|
| mesh_breaker_probe_in_seconds    | dependency, method | time until an open breaker's probe     |
| mesh_bulkhead_in_use             | dependency         | calls holding a bulkhead slot now      |
| mesh_bulkhead_limit              | dependency         | the bulkhead's max_concurrent          |
| mesh_retry_budget_tokens         | dependency         | the retry budget's tokens now          |
| mesh_retry_budget_max_tokens     | dependency         | its capacity (retries while > half)    |

A breaker that exists but never moved is reported too (probe 0): the console lists every
method that has a breaker. The scrape runs on the metrics thread; it only reads attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mesh.resilience.breaker import BreakerStrategy
from mesh.resilience.bulkhead import Bulkhead
from mesh.resilience.pipeline import Pipeline
from mesh.resilience.retry import Retry

PipelinesNow = Callable[[], Mapping[str, Pipeline]]
"""The current pipeline of each outbound edge, by dependency (a policy swap replaces them)."""


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
