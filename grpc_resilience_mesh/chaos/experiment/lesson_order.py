"""The order the catalogue teaches in: deadlines and timeouts, then retries, retry storms,
breakers, bulkheads, shedding, and last the background jobs. Experiments not named here
(a user's own) come after, alphabetically."""

from __future__ import annotations

from collections.abc import Iterable

LESSON_ORDER = (
    "deadline-budget",  # one deadline, hop to hop
    "fault-sources",  # the three fault sources (Toxiproxy, the interceptor, xDS A33) in a trace
    "payment-lost-response",  # a timeout that may have charged: idempotent retries
    "pushback",  # how long a retry waits
    "stream-cut",  # a stream is retried only before its first item, never after part of it
    "provider-outage",  # retries alone storm a dependency; a breaker fails fast
    "fallback-trap",  # a breaker shared with its own fallback
    "flapping-dependency",  # a breaker recovering after each outage
    "bulkhead-reject",  # a bulkhead's figure depends on the load's shape
    "bulkhead-isolation",  # a slow dependency must not take another with it
    "load-shedding",  # refuse early rather than fail late
    "overload-sweep",  # a declared capacity: adaptive limits, the client throttle, the curve
    "metastable-retry-storm",  # a short slowdown, and retries keep the mesh down after it
    "metastable-four-panel",  # the OSDI'22 retry runs: trigger size, length and load decide
    "criticality",  # under overload the sheddable calls go first, the critical ones hold
    "replica-loss",  # a dead replica: retries go to the other, ejection takes it out and back
    "slow-replica",  # a slow replica: ejection on deadline failures moves its traffic
    "receipt-backoff",  # jobs: backoff for transient errors
    "receipt-throughput",  # jobs: concurrency and rate limits
    "worker-crash",  # jobs: a killed worker's jobs recovered
    "duplicate-enqueue",  # jobs: one job per receipt
    "poison-job",  # jobs: a job that kills its worker is failed after maxStalledCount stalls
    "false-stall",  # jobs: a blocked event loop loses the lock; keep blocking work off it
)


def lesson_rank(name: str) -> tuple[int, str]:
    """Sort key: the lesson's place, then the name."""
    return (LESSON_ORDER.index(name) if name in LESSON_ORDER else len(LESSON_ORDER), name)


def in_lesson_order(names: Iterable[str]) -> list[str]:
    return sorted(names, key=lesson_rank)
