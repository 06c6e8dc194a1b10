"""The notification worker's configuration, from the environment.

BullMQ speaks milliseconds, so its knobs keep BullMQ's unit in their names (`_MS`), as
Toxiproxy's do; everything else is in seconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mesh.contracts.receipt_job import QUEUE
from mesh.runtime.config import ConfigError, ServiceConfig


def _positive_int(env: Mapping[str, str], var: str, default: int, minimum: int = 1) -> int:
    raw = env.get(var)
    if raw is None or raw == "":
        return default
    if not (raw.strip().isascii() and raw.strip().isdigit()) or int(raw) < minimum:
        raise ConfigError(f"{var}={raw!r} is not an integer >= {minimum}")
    return int(raw)


def _seconds(env: Mapping[str, str], var: str, default: float) -> float:
    raw = env.get(var)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{var}={raw!r} is not a number") from None
    if value <= 0:
        raise ConfigError(f"{var}={raw!r} must be > 0")
    return value


def _flag(env: Mapping[str, str], var: str) -> bool:
    raw = env.get(var) or "0"
    if raw not in ("0", "1"):
        raise ConfigError(f"{var}={raw!r} is not 0 or 1")
    return raw == "1"


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
    """NOTIFY_DRILLS=1: obey the test-only fault drills jobs carry (drills.py). Default off;
    only the job experiments and tests start workers with it."""

    @classmethod
    def from_env(
        cls, service: ServiceConfig, environ: Mapping[str, str] | None = None
    ) -> NotificationConfig:
        env = os.environ if environ is None else environ
        lock_ms = _positive_int(env, "NOTIFY_LOCK_MS", 30_000, minimum=100)
        return cls(
            redis_addr=service.dependencies["redis"],
            smtp_addr=service.dependencies["smtp"],
            queue=env.get("NOTIFY_QUEUE") or QUEUE,
            concurrency=_positive_int(env, "NOTIFY_CONCURRENCY", 4),
            rate_max=_positive_int(env, "NOTIFY_RATE_MAX", 0, minimum=0),
            rate_duration_ms=_positive_int(env, "NOTIFY_RATE_DURATION_MS", 1000),
            lock_ms=lock_ms,
            stalled_interval_ms=_positive_int(
                env, "NOTIFY_STALLED_INTERVAL_MS", lock_ms // 2, minimum=50
            ),
            max_stalled=_positive_int(env, "NOTIFY_MAX_STALLED", 1, minimum=0),
            smtp_timeout_s=_seconds(env, "NOTIFY_SMTP_TIMEOUT_S", 10.0),
            sender=env.get("NOTIFY_FROM") or "receipts@mesh.local",
            sent_ttl_s=_seconds(env, "NOTIFY_SENT_TTL_S", 7 * 24 * 3600.0),
            drills=_flag(env, "NOTIFY_DRILLS"),
        )
