"""Per-edge rates, error rate, latency quantiles and resilience state, from the services'
own /metrics: read synchronously, kept for a short window, turned into per-second figures."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from grpc_resilience_mesh.client.counters import Snapshot, read
from grpc_resilience_mesh.console.server_stats import ServerStats, server_stats
from grpc_resilience_mesh.services.topology import replica_of

BREAKER_STATES = {0: "closed", 1: "half-open", 2: "open"}
log = logging.getLogger("grpc_resilience_mesh.console")


SHOWN = frozenset(
    {
        "mesh_breaker_probe_in_seconds",
        "mesh_breaker_rejections_total",
        "mesh_breaker_state",
        "mesh_bulkhead_in_use",
        "mesh_bulkhead_limit",
        "mesh_client_call_seconds_bucket",
        "mesh_client_calls_total",
        "mesh_client_retries_total",
        "mesh_client_throttled_total",
        "mesh_fallbacks_total",
        "mesh_jobs_duration_seconds_bucket",
        "mesh_jobs_duration_seconds_count",
        "mesh_jobs_enqueued_total",
        "mesh_jobs_retried_total",
        "mesh_pool_in_use",
        "mesh_pool_queue_length",
        "mesh_replica_ejected",
        "mesh_request_fates_total",
        "mesh_retry_budget_max_tokens",
        "mesh_retry_budget_tokens",
        "mesh_server_calls_total",
        "mesh_server_concurrency_limit",
        "mesh_server_in_flight",
        "mesh_server_shed_total",
    }
)
"""The samples the console and `mesh status` show: only these lines are parsed (the parser is
most of a scrape's cost, and the sampler scrapes every second)."""


def _shown_lines(text: str) -> str:
    return "".join(
        line + "\n"
        for line in text.splitlines()
        if line[:1] != "#" and line.partition("{")[0].partition(" ")[0] in SHOWN
    )


def read_metrics(urls: Mapping[str, str], timeout_s: float = 1.0) -> Snapshot:
    """Every service's samples now (those in SHOWN); a service that does not answer is listed
    as unreachable."""
    return read(urls, timeout_s=timeout_s, keep=_shown_lines)


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile over cumulative (upper bound, count) pairs, in seconds (not
    grpc_resilience_mesh.loadgen.percentile: a histogram holds counts per bucket, no samples to pick
    from)."""
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
    throttled_per_s: float = 0.0
    """Attempts the edge's adaptive throttle refused locally (never sent)."""
    breakers: list[BreakerView] = field(default_factory=list)
    bulkhead_in_use: float | None = None
    bulkhead_limit: float | None = None
    budget_tokens: float | None = None
    budget_max_tokens: float | None = None
    fates_per_s: dict[str, float] = field(default_factory=dict)
    """The caller's own calls received, per second by fate (grpc_aio_resilience.fates): at the
    gateway, what became of the requests this edge serves."""


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
        elif name == "mesh_client_throttled_total":
            stats.throttled_per_s += value * per_s
        elif name == "mesh_client_call_seconds_bucket":
            bound = float(labels["le"])
            buckets[bound] = buckets.get(bound, 0.0) + value
    stats.calls_per_s = calls * per_s
    stats.error_rate = errors / calls if calls else 0.0
    stats.fates_per_s = fates_per_s(window, caller, per_s)
    pairs = list(buckets.items())
    p50, p99 = quantile(0.5, pairs), quantile(0.99, pairs)
    stats.p50_ms = None if p50 is None else p50 * 1000
    stats.p99_ms = None if p99 is None else p99 * 1000
    _gauges(stats, now, caller, dependency)
    return stats


def fates_per_s(window: Snapshot, service: str, per_s: float) -> dict[str, float]:
    """`service`'s (its replicas added up) calls received per second, by fate."""
    fates: dict[str, float] = {}
    for (name_of, name, labels), value in window.values.items():
        if name == "mesh_request_fates_total" and value and replica_of(name_of) == service:
            fate = dict(labels).get("fate", "")
            fates[fate] = fates.get(fate, 0.0) + value * per_s
    return dict(sorted(fates.items(), key=lambda item: -item[1]))


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
    """Timestamped scrapes covering the last `window_s`, so every rate is per second over the
    last `window_s` (up to one sampling interval more): the oldest scrape kept is the newest
    taken at least `window_s` before the latest. Safe to share between threads (a sampler
    adds, requests read)."""

    def __init__(
        self,
        urls: Mapping[str, str],
        window_s: float = 5.0,
        read: Callable[[Mapping[str, str]], Snapshot] = read_metrics,
    ) -> None:
        self._urls = dict(urls)
        self._window_s = window_s
        self._read = read
        self._scrapes: deque[tuple[float, Snapshot]] = deque()
        self._lock = threading.Lock()

    def refresh(self, at_s: float | None = None) -> None:
        snap = self._read(self._urls)
        self.add(time.monotonic() if at_s is None else at_s, snap)

    def refresh_if_older(self, max_age_s: float, at_s: float | None = None) -> None:
        """Scrape unless the latest scrape is younger than `max_age_s` (a sampler keeps it so)."""
        at_s = time.monotonic() if at_s is None else at_s
        with self._lock:
            fresh = bool(self._scrapes) and at_s - self._scrapes[-1][0] < max_age_s
        if not fresh:
            self.refresh(at_s)

    def add(self, at_s: float, snap: Snapshot) -> None:
        with self._lock:
            self._scrapes.append((at_s, snap))
            while len(self._scrapes) > 1 and self._scrapes[1][0] <= at_s - self._window_s:
                self._scrapes.popleft()

    def latest(self) -> Snapshot:
        with self._lock:
            return self._scrapes[-1][1] if self._scrapes else Snapshot()

    def growth(self) -> tuple[Snapshot, float]:
        """Counters' growth between the oldest and newest scrape kept, and the seconds between."""
        with self._lock:
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


class MetricsSampler:
    """Scrapes into a MetricsWindow every `every_s` on a daemon thread, whether a page is open
    or not: the first frame after a quiet spell is a last-window figure like every other (a
    console that scraped only when asked averaged over the whole spell)."""

    def __init__(self, window: MetricsWindow, every_s: float = 1.0) -> None:
        self._window = window
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="console-sampler", daemon=True)

    def start(self) -> MetricsSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._window.refresh()
            except Exception:  # a bad scrape must not end the sampling
                log.exception("console: scrape failed")
            self._stop.wait(self._every_s)
