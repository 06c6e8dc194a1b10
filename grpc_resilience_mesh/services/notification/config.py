"""The notification worker's configuration, from the environment.

BullMQ speaks milliseconds, so its knobs keep BullMQ's unit in their names (`_MS`), as
Toxiproxy's do; everything else is in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.contracts.receipt_job import QUEUE, REDIS_PASSWORD
from grpc_resilience_mesh.services.runtime.config import ServiceConfig

V = settings.Var
QUEUE_NAME = V(
    "NOTIFY_QUEUE", settings.text, QUEUE, "the BullMQ queue the worker takes receipts from"
)
CONCURRENCY = V("NOTIFY_CONCURRENCY", settings.integer_in(1), 4, "jobs one worker runs at once")
RATE_MAX = V(
    "NOTIFY_RATE_MAX",
    settings.integer_in(0),
    0,
    "jobs per window across every worker; 0: no limiter",
)
RATE_DURATION_MS = V(
    "NOTIFY_RATE_DURATION_MS", settings.integer_in(1), 1000, "the limiter's window"
)
LOCK_MS = V(
    "NOTIFY_LOCK_MS",
    settings.integer_in(100),
    30_000,
    "a job's lock; a dead worker's job is recovered once it expires",
)
STALLED_INTERVAL_MS: settings.Var[int | None] = V(
    "NOTIFY_STALLED_INTERVAL_MS",
    settings.integer_in(50),
    None,
    "how often the worker looks for stalled jobs (default: half the lock)",
)
MAX_STALLED = V(
    "NOTIFY_MAX_STALLED",
    settings.integer_in(0),
    1,
    "how often a job may stall before it fails",
)
SMTP_TIMEOUT_S = V(
    "NOTIFY_SMTP_TIMEOUT_S",
    settings.number_in(0, above=True),
    10.0,
    "connect and per-command SMTP timeout",
)
SENDER = V("NOTIFY_FROM", settings.text, "receipts@mesh.local", "the receipts' From address")
SENT_TTL_S = V(
    "NOTIFY_SENT_TTL_S",
    settings.number_in(0, above=True),
    7 * 24 * 3600.0,
    "how long the 'receipt sent' marker is kept",
)
DRILLS = V(
    "NOTIFY_DRILLS",
    settings.one_of("0", "1"),
    "0",
    "1: obey the test-only fault drills jobs carry",
)


@dataclass(frozen=True)
class NotificationConfig:
    """What the receipt worker reads besides the common ServiceConfig."""

    redis_addr: str
    """REDIS_ADDR: the queue's Redis (through the notification_to_redis proxy in the mesh)."""
    smtp_addr: str
    """SMTP_ADDR: where receipts are sent (through the notification_to_smtp proxy)."""
    queue: str
    """NOTIFY_QUEUE: the BullMQ queue name. Default receipts."""
    concurrency: int
    """NOTIFY_CONCURRENCY: jobs one worker runs at once. Default 4."""
    rate_max: int
    """NOTIFY_RATE_MAX: jobs per window across every worker of the queue; 0 = no limiter."""
    rate_duration_ms: int
    """NOTIFY_RATE_DURATION_MS: the limiter's window. Default 1000."""
    lock_ms: int
    """NOTIFY_LOCK_MS: a job's lock; a dead worker's job is recovered once it expires.
    Default 30000 (BullMQ's). Renewed every half lock while the job runs."""
    stalled_interval_ms: int
    """NOTIFY_STALLED_INTERVAL_MS: how often this worker looks for stalled jobs.
    Default: half the lock."""
    max_stalled: int
    """NOTIFY_MAX_STALLED: how often a job may stall before it fails (a poison job that kills
    workers must not kill them forever). Default 1."""
    smtp_timeout_s: float
    """NOTIFY_SMTP_TIMEOUT_S: connect and per-command SMTP timeout. Default 10 s."""
    sender: str
    """NOTIFY_FROM: the From address. Default receipts@mesh.local."""
    sent_ttl_s: float
    """NOTIFY_SENT_TTL_S: how long the "receipt sent" marker is kept. Default 7 days."""
    drills: bool = False
    """NOTIFY_DRILLS=1: the drill worker
    (grpc_resilience_mesh/chaos/scenarios/receipts/drill_worker.py) obeys the test-only fault drills
    jobs carry. Default off; the product's worker has no drills."""
    redis_password: str = field(default="", repr=False)
    """REDIS_PASSWORD: the queue's AUTH password; unset or empty: none. Never in a repr."""

    @classmethod
    def from_env(
        cls, service: ServiceConfig, environ: Mapping[str, str] | None = None
    ) -> NotificationConfig:
        env = settings.env_or_os(environ)
        queue, concurrency = QUEUE_NAME.read(env), CONCURRENCY.read(env)
        rate_max, rate_window = RATE_MAX.read(env), RATE_DURATION_MS.read(env)
        lock_ms, stalled_every = LOCK_MS.read(env), STALLED_INTERVAL_MS.read(env)
        max_stalled, smtp_timeout_s = MAX_STALLED.read(env), SMTP_TIMEOUT_S.read(env)
        sender, sent_ttl_s, drills = SENDER.read(env), SENT_TTL_S.read(env), DRILLS.read(env)
        return cls(
            redis_addr=service.dependencies["redis"],
            smtp_addr=service.dependencies["smtp"],
            queue=queue,
            concurrency=concurrency,
            rate_max=rate_max,
            rate_duration_ms=rate_window,
            lock_ms=lock_ms,
            stalled_interval_ms=stalled_every or lock_ms // 2,
            max_stalled=max_stalled,
            smtp_timeout_s=smtp_timeout_s,
            sender=sender,
            sent_ttl_s=sent_ttl_s,
            drills=drills == "1",
            redis_password=REDIS_PASSWORD.read(environ),
        )
