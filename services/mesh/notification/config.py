"""The notification worker's configuration, from the environment.

BullMQ speaks milliseconds, so its knobs keep BullMQ's unit in their names (`_MS`), as
Toxiproxy's do; everything else is in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import Field

from mesh import settings
from mesh.contracts.receipt_job import QUEUE
from mesh.runtime.config import ServiceConfig
from mesh.settings import Choice, EnvSettings, Float, Int


class _Env(EnvSettings):
    queue: str = Field(QUEUE, validation_alias="NOTIFY_QUEUE")
    concurrency: Annotated[int, Int(1)] = Field(4, validation_alias="NOTIFY_CONCURRENCY")
    rate_max: Annotated[int, Int(0)] = Field(0, validation_alias="NOTIFY_RATE_MAX")
    rate_duration_ms: Annotated[int, Int(1)] = Field(
        1000, validation_alias="NOTIFY_RATE_DURATION_MS"
    )
    lock_ms: Annotated[int, Int(100)] = Field(30_000, validation_alias="NOTIFY_LOCK_MS")
    stalled_interval_ms: Annotated[int | None, Int(50)] = Field(
        None, validation_alias="NOTIFY_STALLED_INTERVAL_MS"
    )
    max_stalled: Annotated[int, Int(0)] = Field(1, validation_alias="NOTIFY_MAX_STALLED")
    smtp_timeout_s: Annotated[float, Float(0, above=True)] = Field(
        10.0, validation_alias="NOTIFY_SMTP_TIMEOUT_S"
    )
    sender: str = Field("receipts@mesh.local", validation_alias="NOTIFY_FROM")
    sent_ttl_s: Annotated[float, Float(0, above=True)] = Field(
        7 * 24 * 3600.0, validation_alias="NOTIFY_SENT_TTL_S"
    )
    drills: Annotated[str, Choice("0", "1")] = Field("0", validation_alias="NOTIFY_DRILLS")
    redis_password: str = Field("", validation_alias="REDIS_PASSWORD")


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
    redis_password: str = field(default="", repr=False)
    """REDIS_PASSWORD: the queue's AUTH password; unset or empty: none. Never in a repr."""

    @classmethod
    def from_env(
        cls, service: ServiceConfig, environ: Mapping[str, str] | None = None
    ) -> NotificationConfig:
        env = settings.load(_Env, environ)
        return cls(
            redis_addr=service.dependencies["redis"],
            smtp_addr=service.dependencies["smtp"],
            queue=env.queue,
            concurrency=env.concurrency,
            rate_max=env.rate_max,
            rate_duration_ms=env.rate_duration_ms,
            lock_ms=env.lock_ms,
            stalled_interval_ms=env.stalled_interval_ms or env.lock_ms // 2,
            max_stalled=env.max_stalled,
            smtp_timeout_s=env.smtp_timeout_s,
            sender=env.sender,
            sent_ttl_s=env.sent_ttl_s,
            drills=env.drills == "1",
            redis_password=env.redis_password,
        )
