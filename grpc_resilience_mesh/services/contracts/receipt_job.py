"""The receipt job's contract, shared by its producer (payment's relay) and its consumer.

A receipt job is named `receipt`, lives on the `receipts` queue and has the id
`receipt-<charge id>`: BullMQ adds a job id once, so one charge can never queue two receipts.
Its attempts and backoff travel with the job (set at enqueue), so whoever enqueues decides how
hard a receipt is retried; the worker only computes the delays.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from grpc_resilience_mesh.services import settings

QUEUE = "receipts"
JOB_NAME = "receipt"
BACKOFF_TYPE = "exponential-jitter"
_CHARGE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)  # fullmatch: no trailing newline
_USER_ID = re.compile(r"u-[0-9]{4}", re.ASCII)
_CURRENCY = re.compile(r"[A-Z]{3}", re.ASCII)
DRILL_KEY = "drill"
"""Job data's test-only fault drill (grpc_resilience_mesh/chaos/scenarios/receipts/drills.py): never
set by payment's relay, and obeyed only by the drill worker started with NOTIFY_DRILLS=1."""
STALLED_REASON = "job stalled more than allowable limit"
"""BullMQ's failedReason for a job that stalled more than maxStalledCount times."""


REDIS_PASSWORD = settings.Var(
    "REDIS_PASSWORD", settings.text, "", "the receipts queue's Redis AUTH password (empty: none)"
)
RECEIPT_QUEUE = settings.Var("RECEIPT_QUEUE", settings.text, QUEUE, "the queue payment enqueues on")
ATTEMPTS = settings.Var(
    "RECEIPT_ATTEMPTS", lambda raw: settings.integer(raw, 1), 5, "total tries of one receipt"
)
BACKOFF_S = settings.Var(
    "RECEIPT_BACKOFF_S",
    lambda raw: settings.number(raw, 0, unit="seconds"),
    2.0,
    "the first retry's delay; the n-th waits backoff_s * 2**(n-1)",
)
BACKOFF_JITTER = settings.Var(
    "RECEIPT_BACKOFF_JITTER",
    lambda raw: settings.number(raw, 0, 1),
    0.2,
    "each retry's delay is cut by up to this fraction at random",
)


def _count(raw: str) -> int:
    """An integer >= 1, written bare (BullMQ's keep options have refused ' 5' since issue 21)."""
    if raw != raw.strip():
        raise settings.RuleError("is not an integer >= 1")
    return settings.integer(raw, 1)


def _keep(name: str, default: int, help: str) -> settings.Var[int]:
    return settings.Var(name, _count, default, help)


KEEP_COMPLETED_S = _keep("RECEIPT_KEEP_COMPLETED_S", 7 * 24 * 3600, "a completed job's age limit")
KEEP_COMPLETED = _keep("RECEIPT_KEEP_COMPLETED", 10_000, "completed jobs kept, newest first")
KEEP_FAILED_S = _keep("RECEIPT_KEEP_FAILED_S", 30 * 24 * 3600, "a failed job's age limit")
KEEP_FAILED = _keep("RECEIPT_KEEP_FAILED", 10_000, "failed jobs kept, newest first")


class BadPayload(ValueError):
    """A job's data is not a receipt; retrying cannot fix it (the message says which field)."""


def redis_url(addr: str, password: str = "") -> str:
    """The queue's Redis as producer and consumer dial it: redis://[:PASSWORD@]HOST:PORT.
    `addr` is REDIS_ADDR, `password` REDIS_PASSWORD (empty: no AUTH); percent-encoded, as
    redis-py decodes it."""
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}{addr}"


def job_id_for(charge_id: str) -> str:
    return f"receipt-{charge_id}"


@dataclass(frozen=True)
class Receipt:
    """What a receipt says: one successful charge."""

    charge_id: str
    user_id: str
    amount_cents: int
    currency: str
    created_at: float

    def to_data(self, trace: Mapping[str, str] | None = None) -> dict[str, Any]:
        return {
            "charge_id": self.charge_id,
            "user_id": self.user_id,
            "amount_cents": self.amount_cents,
            "currency": self.currency,
            "created_at": self.created_at,
            "trace": dict(trace or {}),
        }

    @classmethod
    def from_data(cls, data: Any) -> Receipt:
        """Validate job data; raise BadPayload naming the first bad field."""
        if not isinstance(data, dict):
            raise BadPayload(f"bad payload: job data is {type(data).__name__}, not an object")

        def field(name: str, kind: type, pattern: re.Pattern[str] | None = None) -> Any:
            if name not in data:
                raise BadPayload(f"bad payload: {name}: required")
            value = data[name]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise BadPayload(f"bad payload: {name}: {value!r} is not {kind.__name__}")
            if pattern is not None and not pattern.fullmatch(str(value)):
                raise BadPayload(f"bad payload: {name}: {value!r} is malformed")
            return value

        amount = field("amount_cents", int)
        if amount <= 0:
            raise BadPayload(f"bad payload: amount_cents: {amount} must be > 0")
        created = field("created_at", float)
        if not math.isfinite(created):
            raise BadPayload("bad payload: created_at: not a finite number")
        return cls(
            charge_id=field("charge_id", str, _CHARGE_ID),
            user_id=field("user_id", str, _USER_ID),
            amount_cents=amount,
            currency=field("currency", str, _CURRENCY),
            created_at=created,
        )


@dataclass(frozen=True)
class ReceiptRetry:
    """How hard one receipt is tried, set on the job when it is enqueued."""

    attempts: int = ATTEMPTS.default
    """RECEIPT_ATTEMPTS: total tries (BullMQ's default 1 means no retry at all)."""
    backoff_s: float = BACKOFF_S.default
    """RECEIPT_BACKOFF_S: the first retry's delay; the n-th waits backoff_s * 2**(n-1)."""
    jitter: float = BACKOFF_JITTER.default
    """RECEIPT_BACKOFF_JITTER: each delay is cut by up to this fraction at random, so receipts
    that failed together do not all come back together."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReceiptRetry:
        return cls(ATTEMPTS.read(environ), BACKOFF_S.read(environ), BACKOFF_JITTER.read(environ))

    def job_options(self, job_id: str, retention: ReceiptRetention | None = None) -> dict[str, Any]:
        """BullMQ job options (the API speaks milliseconds); finished jobs kept as `retention`
        says (default: ReceiptRetention())."""
        return {
            "jobId": job_id,
            "attempts": self.attempts,
            "backoff": {
                "type": BACKOFF_TYPE,
                "delay": round(self.backoff_s * 1000),
                "jitter": self.jitter,
            },
            **(retention or ReceiptRetention()).job_options(),
        }

    def schedule_s(self) -> list[float]:
        """When each attempt starts, after the first, with no jitter: 0, 2, 6, 14, 30 at 2 s."""
        return [self.backoff_s * (2**n - 1) for n in range(self.attempts)]


@dataclass(frozen=True)
class ReceiptRetention:
    """How long BullMQ keeps finished receipt jobs: by age and by count, whichever removes first
    (BullMQ's removeOnComplete / removeOnFail, applied when a job finishes). Without them BullMQ
    keeps every finished job forever and Redis grows with every receipt."""

    completed_age_s: int = KEEP_COMPLETED_S.default
    """RECEIPT_KEEP_COMPLETED_S: a completed job is kept at most 7 days."""
    completed_count: int = KEEP_COMPLETED.default
    """RECEIPT_KEEP_COMPLETED: and only the newest 10000 completed jobs."""
    failed_age_s: int = KEEP_FAILED_S.default
    """RECEIPT_KEEP_FAILED_S: a failed job is kept 30 days, to be read and retried
    (`mesh jobs show`, `mesh jobs retry`)."""
    failed_count: int = KEEP_FAILED.default
    """RECEIPT_KEEP_FAILED: and only the newest 10000 failed jobs."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReceiptRetention:
        return cls(
            KEEP_COMPLETED_S.read(environ),
            KEEP_COMPLETED.read(environ),
            KEEP_FAILED_S.read(environ),
            KEEP_FAILED.read(environ),
        )

    def job_options(self) -> dict[str, Any]:
        """BullMQ's keep options: `age` in seconds, `count` in jobs."""
        return {
            "removeOnComplete": {"age": self.completed_age_s, "count": self.completed_count},
            "removeOnFail": {"age": self.failed_age_s, "count": self.failed_count},
        }


def backoff_delay_ms(
    attempts_made: int, backoff: Mapping[str, Any], rng: random.Random | None = None
) -> int:
    """The delay before the next attempt after `attempts_made` failed ones."""
    base = float(backoff.get("delay") or 0)
    jitter = float(backoff.get("jitter", 0.0))
    delay: float = base * 2.0 ** (max(attempts_made, 1) - 1)
    cut: float = (rng or random).random() * jitter if jitter else 0.0
    return round(delay * (1.0 - cut))
