"""Per-edge rates, error rate, latency quantiles and resilience state, from the services'
own /metrics: read synchronously, kept for a short window, turned into per-second figures."""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from mesh.topology import replica_of
from meshctl.console.server_stats import ServerStats, server_stats
from meshctl.counters import Snapshot

BREAKER_STATES = {0: "closed", 1: "half-open", 2: "open"}


def read_metrics(urls: Mapping[str, str], timeout_s: float = 1.0) -> Snapshot:
    """Every service's samples now; a service that does not answer is listed as unreachable."""
    snap = Snapshot()
    for service, url in urls.items():
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                text = response.read().decode()
        except (urllib.error.URLError, OSError, ValueError):
            snap.unreachable.append(service)
            continue
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if not sample.name.endswith("_created"):
                    key = (service, sample.name, frozenset(sample.labels.items()))
                    snap.values[key] = float(sample.value)
    return snap


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile over cumulative (upper bound, count) pairs, in seconds."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            inside = count - lower_count
            share = (rank - lower_count) / inside if inside > 0 else 1.0
            return lower_bound + (bound - lower_bound) * share
        lower_bound, lower_count = bound, count
    return lower_bound


@dataclass
class BreakerView:
    method: str
    state: str
    probe_in_s: float


@dataclass
class EdgeStats:
    """What the caller's metrics say about one edge over the window."""

    calls_per_s: float = 0.0
    error_rate: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    retries_per_s: float = 0.0
    fallbacks_per_s: float = 0.0
    breaker_rejections_per_s: float = 0.0
    breakers: list[BreakerView] = field(default_factory=list)
    bulkhead_in_use: float | None = None
    bulkhead_limit: float | None = None
    budget_tokens: float | None = None
    budget_max_tokens: float | None = None


def _edge_samples(
    snap: Snapshot, caller: str, dependency: str
) -> Iterator[tuple[str, dict[str, str], float]]:
    """(sample name, labels, value) of the caller's (and its replicas') samples about the edge."""
    for (service, name, labels), value in snap.values.items():
        d = dict(labels)
        if replica_of(service) == caller and d.get("dependency") == dependency:
            yield name, d, value


def edge_stats(
    now: Snapshot, window: Snapshot, seconds: float, caller: str, dependency: str
) -> EdgeStats:
    """`now`: the latest samples (gauges); `window`: counters' growth over `seconds`."""
    per_s = 1.0 / seconds if seconds > 0 else 0.0
    stats = EdgeStats()
    calls = errors = 0.0
    buckets: dict[float, float] = {}
    for name, labels, value in _edge_samples(window, caller, dependency):
        if name == "mesh_client_calls_total":
            calls += value
            errors += value if labels.get("outcome") != "OK" else 0.0
        elif name == "mesh_client_retries_total":
            stats.retries_per_s += value * per_s
        elif name == "mesh_fallbacks_total":
            stats.fallbacks_per_s += value * per_s
        elif name == "mesh_breaker_rejections_total":
            stats.breaker_rejections_per_s += value * per_s
        elif name == "mesh_client_call_seconds_bucket":
            bound = float(labels["le"])
            buckets[bound] = buckets.get(bound, 0.0) + value
    stats.calls_per_s = calls * per_s
    stats.error_rate = errors / calls if calls else 0.0
    pairs = list(buckets.items())
    p50, p99 = quantile(0.5, pairs), quantile(0.99, pairs)
    stats.p50_ms = None if p50 is None else p50 * 1000
    stats.p99_ms = None if p99 is None else p99 * 1000
    _gauges(stats, now, caller, dependency)
    return stats


def _gauges(stats: EdgeStats, now: Snapshot, caller: str, dependency: str) -> None:
    """Replicas of the caller add up: slots in use and limits summed, the budget and each
    method's breaker shown at their worst (fewest tokens; open over half-open over closed)."""
    states: dict[str, float] = {}
    probes: dict[str, float] = {}
    for name, labels, value in _edge_samples(now, caller, dependency):
        if name == "mesh_breaker_state":
            states[labels["method"]] = max(states.get(labels["method"], 0.0), value)
        elif name == "mesh_breaker_probe_in_seconds":
            probes[labels["method"]] = max(probes.get(labels["method"], 0.0), value)
        elif name == "mesh_bulkhead_in_use":
            stats.bulkhead_in_use = (stats.bulkhead_in_use or 0.0) + value
        elif name == "mesh_bulkhead_limit":
            stats.bulkhead_limit = (stats.bulkhead_limit or 0.0) + value
        elif name == "mesh_retry_budget_tokens":
            old = stats.budget_tokens
            stats.budget_tokens = value if old is None else min(old, value)
        elif name == "mesh_retry_budget_max_tokens":
            stats.budget_max_tokens = value
    # A breaker that exists has a probe gauge; one replaced by a policy swap keeps only its
    # state gauge (closed), so the probe gauge decides which breakers are shown.
    for method in sorted(probes):
        state = BREAKER_STATES.get(int(states.get(method, 0)), "closed")
        stats.breakers.append(BreakerView(method, state, probes[method]))


class MetricsWindow:
    """The last few scrapes, so rates are per second over a short window (`window_s`)."""

    def __init__(self, urls: Mapping[str, str], window_s: float = 5.0) -> None:
        self._urls = dict(urls)
        self._window_s = window_s
        self._scrapes: deque[tuple[float, Snapshot]] = deque()

    def refresh(self, at_s: float | None = None) -> None:
        at_s = time.monotonic() if at_s is None else at_s
        self.add(at_s, read_metrics(self._urls))

    def add(self, at_s: float, snap: Snapshot) -> None:
        self._scrapes.append((at_s, snap))
        while len(self._scrapes) > 2 and at_s - self._scrapes[1][0] >= self._window_s:
            self._scrapes.popleft()

    def latest(self) -> Snapshot:
        return self._scrapes[-1][1] if self._scrapes else Snapshot()

    def growth(self) -> tuple[Snapshot, float]:
        """Counters' growth between the oldest and newest scrape kept, and the seconds between."""
        if len(self._scrapes) < 2:
            return Snapshot(), 0.0
        (t0, first), (t1, last) = self._scrapes[0], self._scrapes[-1]
        return last - first, t1 - t0

    def edge(self, caller: str, dependency: str) -> EdgeStats:
        growth, seconds = self.growth()
        return edge_stats(self.latest(), growth, seconds, caller, dependency)

    def server(self, service: str) -> ServerStats:
        growth, seconds = self.growth()
        return server_stats(self.latest(), growth, seconds, service)
