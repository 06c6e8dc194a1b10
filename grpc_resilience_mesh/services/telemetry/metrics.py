"""Prometheus metrics: a listener that turns resilience events into counters and gauges.

| metric                                | type    | labels                          |
|---------------------------------------|---------|---------------------------------|
| mesh_service_info                     | gauge   | service (always 1)              |
| mesh_client_calls_total               | counter | dependency, method, outcome     |
| mesh_client_attempts_total            | counter | dependency, method, outcome     |
| mesh_client_call_seconds              | histogram | dependency, method            |
| mesh_client_retries_total             | counter | dependency, method, reason      |
| mesh_client_retries_skipped_total     | counter | dependency, method, reason      |
| mesh_client_deadline_exhausted_total  | counter | dependency, method, stage       |
| mesh_pushbacks_honoured_total         | counter | dependency, method              |
| mesh_breaker_state                    | gauge   | dependency, method              |
| mesh_breaker_transitions_total        | counter | dependency, method, to_state    |
| mesh_breaker_rejections_total         | counter | dependency, method              |
| mesh_bulkhead_rejections_total        | counter | dependency, method              |
| mesh_client_throttled_total           | counter | dependency, method              |
| mesh_fallbacks_total                  | counter | dependency, method, served_by   |
| mesh_server_calls_total               | counter | method, code                    |
| mesh_server_in_flight                 | gauge   | method                          |
| mesh_server_deadline_overrun_seconds  | histogram | method                        |
| mesh_server_shed_total                | counter | method, reason                  |
| mesh_request_fates_total              | counter | method, fate                    |
| mesh_server_concurrency_limit         | gauge   | service                         |
| mesh_pool_in_use                      | gauge   | service                         |
| mesh_pool_queue_length                | gauge   | service                         |
| mesh_pool_wait_seconds                | histogram | service                       |
| mesh_pool_abandoned_total             | counter | service                         |
| mesh_server_streams_expired_total     | counter | method                          |
| mesh_faults_injected_total            | counter | method, code                    |
| mesh_replica_ejections_total          | counter | dependency, replica, reason     |
| mesh_replica_returns_total            | counter | dependency, replica             |

`outcome` and `code` are gRPC status code names ("OK", "UNAVAILABLE", ...); `method` is the full
gRPC method name, or "*" for a per-dependency breaker; `mesh_breaker_state` is 0 closed, 1
half-open, 2 open, read at scrape time from the breaker's clock (an open breaker nobody calls reads
half-open once its open time has passed; a policy swap's fresh breakers read closed); retry `reason`
is the failing code name; skip `reason` is one of attempts, budget, pushback, not_retryable_method,
retries_off; `stage` is attempt or backoff. `mesh_server_deadline_overrun_seconds` observes, for
each call that arrived with a deadline and ended CANCELLED or DEADLINE_EXCEEDED, how long it kept
running past that deadline (0 when it stopped in time): how fast cancellation reaches this service.
`mesh_server_shed_total` counts unary calls and streams refused by admission; `reason` is limit,
queue_full, queue_timeout, deadline, criticality or intake (grpc_aio_resilience.admission);
`mesh_request_fates_total` counts each unary call received by its fate (grpc_aio_resilience.fates:
ok, ok-after-retry(N), shed(SERVICE:LIMIT), ...); `mesh_server_concurrency_limit` is the unary
calls' current limit (static `max_in_flight`, or what Vegas / Gradient2 learned; 0: no limit). The
`mesh_pool_*` metrics are the declared worker pool's
(grpc_resilience_mesh.services.runtime.worker_pool): workers busy and calls waiting as the last call
ended, each call's wait for a worker, and the calls it ran for a caller who had gone (policy
`pool.abandoned: run`); `mesh_server_streams_expired_total` counts streams the server ended because
their reader took no message in time or they outlived the server's default stream deadline
(grpc_aio_resilience.stream_guard). `mesh_client_throttled_total` counts attempts the edge's
adaptive throttle rejected locally (never sent; grpc_aio_resilience.throttle).
`mesh_client_call_seconds` is each logical outbound call's wall time, all attempts included.
Bulkhead occupancy, retry budget tokens, time until a breaker's probe and which replicas outlier
ejection keeps out (`mesh_replica_ejected`) are read from the pipelines at scrape time
(grpc_resilience_mesh.services.telemetry.pipeline_gauges, `watch_pipelines`, `watch_replicas`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

import grpc_aio_resilience as ev
from grpc_aio_resilience import Clock, SystemClock, state_at
from grpc_resilience_mesh.services.telemetry.metrics_http import (
    MetricsHttpLimits,
    MetricsHttpServer,
    listen,
)
from grpc_resilience_mesh.services.telemetry.pipeline_gauges import (
    PipelineGauges,
    PipelinesNow,
    ReplicaGauges,
    RoutersNow,
)

_DM = ("dependency", "method")
CALL_SECONDS_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


class _Cached:
    """A labelled metric whose children are looked up once per label set (hot path)."""

    def __init__(self, metric: Counter | Gauge | Histogram) -> None:
        self._metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def child(self, *labels: str) -> Any:
        child = self._children.get(labels)
        if child is None:
            child = self._children[labels] = self._metric.labels(*labels)
        return child


class _BreakerGauge:
    """`mesh_breaker_state`, computed when scraped from each breaker's last move and the clock
    (the breakers' own), so a state that changes with time alone is reported without a call."""

    def __init__(self, gauge: Gauge, clock: Clock) -> None:
        self._gauge = gauge
        self._clock = clock
        self._last: dict[tuple[str, str], tuple[ev.BreakerState, float]] = {}

    def moved(self, e: ev.BreakerStateChanged) -> None:
        key = (e.dependency, e.method)
        fresh = key not in self._last
        self._last[key] = (e.to_state, self._clock.now() + e.time_until_probe_s)
        if fresh:
            self._gauge.labels(*key).set_function(lambda: float(self.state(*key)))

    def state(self, dependency: str, method: str) -> ev.BreakerState:
        to_state, open_until_s = self._last[(dependency, method)]
        return state_at(to_state, open_until_s, self._clock.now())

    def replaced(self) -> None:
        """Every pipeline was rebuilt: the breakers reported so far are gone, new ones closed."""
        for key in self._last:
            self._last[key] = (ev.BreakerState.CLOSED, 0.0)


class MeshMetrics:
    """One service's metrics in the given registry; subscribe `.listener` to its EventBus.

    `clock` must be the clock the service's breakers run on (both default to the system's)."""

    def __init__(
        self, registry: CollectorRegistry, service: str, clock: Clock | None = None
    ) -> None:
        self.registry = registry
        self.service = service
        self._http: MetricsHttpServer | None = None
        self._http_started: asyncio.Task[None] | None = None

        info = Gauge(
            "mesh_service_info", "The service this process runs.", ["service"], registry=registry
        )
        info.labels(service).set(1)
        self._client_metrics(registry, clock or SystemClock())
        self._server_metrics(registry, service)
        self._pool_metrics(registry, service)
        self._handlers = self._event_handlers()

    def _client_metrics(self, registry: CollectorRegistry, clock: Clock) -> None:
        """What each outbound edge's pipeline decides: calls, attempts, retries, breakers..."""

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> _Cached:
            return _Cached(Counter(name, doc, labels, registry=registry))

        self.calls = counter(
            "mesh_client_calls_total", "Logical outbound calls.", (*_DM, "outcome")
        )
        self.attempts = counter(
            "mesh_client_attempts_total", "Outbound attempts sent on the wire.", (*_DM, "outcome")
        )
        self.call_seconds = _Cached(
            Histogram(
                "mesh_client_call_seconds",
                "Logical outbound calls' wall time, all attempts included.",
                _DM,
                registry=registry,
                buckets=CALL_SECONDS_BUCKETS,
            )
        )
        self.retries = counter("mesh_client_retries_total", "Retries scheduled.", (*_DM, "reason"))
        self.retries_skipped = counter(
            "mesh_client_retries_skipped_total", "Transient failures not retried.", (*_DM, "reason")
        )
        self.deadline_exhausted = counter(
            "mesh_client_deadline_exhausted_total",
            "Attempts or backoffs not started for lack of time.",
            (*_DM, "stage"),
        )
        self.pushbacks = counter(
            "mesh_pushbacks_honoured_total", "Retries delayed by a server pushback.", _DM
        )
        self.breaker_state = _BreakerGauge(
            Gauge("mesh_breaker_state", "0 closed, 1 half-open, 2 open.", _DM, registry=registry),
            clock,
        )
        self.breaker_transitions = counter(
            "mesh_breaker_transitions_total", "Breaker state changes.", (*_DM, "to_state")
        )
        self.breaker_rejections = counter(
            "mesh_breaker_rejections_total", "Attempts failed fast by an open breaker.", _DM
        )
        self.bulkhead_rejections = counter(
            "mesh_bulkhead_rejections_total", "Calls refused by a full bulkhead.", _DM
        )
        self.throttled = counter(
            "mesh_client_throttled_total", "Attempts rejected locally by the throttle.", _DM
        )
        self.fallbacks = counter(
            "mesh_fallbacks_total", "Answers served by a fallback.", (*_DM, "served_by")
        )

    def _server_metrics(self, registry: CollectorRegistry, service: str) -> None:
        """What this service's server decides: calls received, in flight, shed, its pool..."""

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> _Cached:
            return _Cached(Counter(name, doc, labels, registry=registry))

        self.server_calls = counter(
            "mesh_server_calls_total", "Calls received, by final code.", ("method", "code")
        )
        self.in_flight = _Cached(
            Gauge(
                "mesh_server_in_flight", "Calls being handled now.", ("method",), registry=registry
            )
        )
        self.overrun = _Cached(
            Histogram(
                "mesh_server_deadline_overrun_seconds",
                "How long a cancelled or expired call kept running past its deadline.",
                ("method",),
                registry=registry,
                buckets=(0.0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            )
        )
        self.shed = counter(
            "mesh_server_shed_total", "Calls refused by admission.", ("method", "reason")
        )
        self.fates = counter(
            "mesh_request_fates_total", "Unary calls received, by fate.", ("method", "fate")
        )
        self.concurrency_limit = Gauge(
            "mesh_server_concurrency_limit",
            "Unary calls admitted at once (0: no limit).",
            ("service",),
            registry=registry,
        ).labels(service)
        self.expired = counter(
            "mesh_server_streams_expired_total",
            "Streams ended by the server: a stalled reader, or no client deadline.",
            ("method",),
        )
        self.faults = counter(
            "mesh_faults_injected_total",
            "Injected faults (code OK: delay only).",
            ("method", "code"),
        )
        self.ejections = counter(
            "mesh_replica_ejections_total",
            "Replicas taken out of rotation by outlier ejection.",
            ("dependency", "replica", "reason"),
        )
        self.returns = counter(
            "mesh_replica_returns_total",
            "Ejected replicas back in rotation.",
            ("dependency", "replica"),
        )

    def _pool_metrics(self, registry: CollectorRegistry, service: str) -> None:
        """The declared-capacity pool's workers in use, its queue and each call's wait."""
        self.pool_in_use = Gauge(
            "mesh_pool_in_use", "Declared workers busy.", ("service",), registry=registry
        ).labels(service)
        self.pool_queued = Gauge(
            "mesh_pool_queue_length", "Calls waiting for a worker.", ("service",), registry=registry
        ).labels(service)
        self.pool_wait = Histogram(
            "mesh_pool_wait_seconds",
            "Each call's wait for a declared worker.",
            ("service",),
            registry=registry,
            buckets=CALL_SECONDS_BUCKETS,
        ).labels(service)
        self.pool_abandoned = Counter(
            "mesh_pool_abandoned_total",
            "Calls a declared worker served for a caller who had gone.",
            ("service",),
            registry=registry,
        ).labels(service)

    def _event_handlers(self) -> dict[type, Callable[[Any], None]]:
        return {
            ev.AttemptFinished: self._attempt,
            ev.CallFinished: self._call,
            ev.RetryScheduled: self._retry,
            ev.RetrySkipped: self._retry_skipped,
            ev.DeadlineExhausted: self._deadline,
            ev.BreakerStateChanged: self._breaker_moved,
            ev.BreakerRejected: self._breaker_rejected,
            ev.BulkheadRejected: self._bulkhead_rejected,
            ev.ClientThrottled: lambda e: self.throttled.child(e.dependency, e.method).inc(),
            ev.FallbackServed: self._fallback,
            ev.ServerCallStarted: self._server_started,
            ev.ServerCallFinished: self._server_call,
            ev.CallShed: lambda e: self.shed.child(e.method, e.reason).inc(),
            ev.ConcurrencyLimitChanged: lambda e: self.concurrency_limit.set(e.limit),
            ev.PoolWorkDone: self._pool,
            ev.StreamExpired: lambda e: self.expired.child(e.method).inc(),
            ev.FaultInjected: self._fault,
            ev.ReplicaEjected: lambda e: self.ejections.child(
                e.dependency, e.replica, e.reason
            ).inc(),
            ev.ReplicaReturned: lambda e: self.returns.child(e.dependency, e.replica).inc(),
        }

    def count_fate(self, method: str, fate: str) -> None:
        """One unary call received ended with `fate` (the server's fate layer calls this)."""
        self.fates.child(method, fate).inc()

    def listener(self, event: ev.Event) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def watch_pipelines(self, pipelines: PipelinesNow) -> None:
        """Report bulkheads, retry budgets and breakers' probe times of these pipelines."""
        self.registry.register(PipelineGauges(pipelines))

    def watch_replicas(self, routers: RoutersNow) -> None:
        """Report which replicas outlier ejection keeps out (`mesh_replica_ejected`)."""
        self.registry.register(ReplicaGauges(routers))

    def breakers_replaced(self) -> None:
        """Call when a new policy rebuilt every pipeline (its breakers start closed)."""
        self.breaker_state.replaced()

    def start_http(self, addr: str, limits: MetricsHttpLimits | None = None) -> int:
        """Binds "host:port" (port 0 picks one; OSError if it cannot) and serves /metrics there on
        the running event loop (grpc_resilience_mesh.services.telemetry.metrics_http); returns the
        port."""
        sock = listen(addr)
        self._http = MetricsHttpServer(self.registry, limits or MetricsHttpLimits())
        self._http_started = asyncio.get_running_loop().create_task(self._http.start(sock))
        return int(sock.getsockname()[1])

    async def stop_http(self) -> None:
        if self._http is not None and self._http_started is not None:
            await self._http_started
            await self._http.close()
            self._http = self._http_started = None

    def _attempt(self, e: ev.AttemptFinished) -> None:
        self.attempts.child(e.dependency, e.method, e.code).inc()

    def _call(self, e: ev.CallFinished) -> None:
        self.calls.child(e.dependency, e.method, e.outcome).inc()
        self.call_seconds.child(e.dependency, e.method).observe(e.duration_s)

    def _retry(self, e: ev.RetryScheduled) -> None:
        self.retries.child(e.dependency, e.method, e.reason).inc()
        if e.pushback_s is not None:
            self.pushbacks.child(e.dependency, e.method).inc()

    def _retry_skipped(self, e: ev.RetrySkipped) -> None:
        self.retries_skipped.child(e.dependency, e.method, e.reason).inc()

    def _deadline(self, e: ev.DeadlineExhausted) -> None:
        self.deadline_exhausted.child(e.dependency, e.method, e.stage).inc()

    def _breaker_moved(self, e: ev.BreakerStateChanged) -> None:
        self.breaker_state.moved(e)
        self.breaker_transitions.child(e.dependency, e.method, e.to_state.name.lower()).inc()

    def _breaker_rejected(self, e: ev.BreakerRejected) -> None:
        self.breaker_rejections.child(e.dependency, e.method).inc()

    def _bulkhead_rejected(self, e: ev.BulkheadRejected) -> None:
        self.bulkhead_rejections.child(e.dependency, e.method).inc()

    def _fallback(self, e: ev.FallbackServed) -> None:
        self.fallbacks.child(e.dependency, e.method, e.served_by).inc()

    def _server_started(self, e: ev.ServerCallStarted) -> None:
        self.in_flight.child(e.method).inc()

    def _server_call(self, e: ev.ServerCallFinished) -> None:
        self.server_calls.child(e.method, e.code).inc()
        self.in_flight.child(e.method).dec()
        if e.budget_s is not None and e.code in ("CANCELLED", "DEADLINE_EXCEEDED"):
            self.overrun.child(e.method).observe(max(0.0, e.duration_s - e.budget_s))

    def _pool(self, e: ev.PoolWorkDone) -> None:
        self.pool_wait.observe(e.waited_s)
        self.pool_in_use.set(e.in_use)
        self.pool_queued.set(e.queued)
        if e.abandoned:
            self.pool_abandoned.inc()

    def _fault(self, e: ev.FaultInjected) -> None:
        self.faults.child(e.method, e.code).inc()
