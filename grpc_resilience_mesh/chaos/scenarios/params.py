"""Every scenario's params, as models validated when the experiment is loaded.

Each number is bounded by what consumes it, said beside it: a worker setting by the worker's
own minimum (mesh/notification/config.py), a fault by the FaultAdmin's range, a time by what a
gateway load may last (LoadSpec: a load of at most 600 s, a deadline of at most 60 s). Where
two params together make the scenario run without end or divide by zero, a check across them
names both.
"""

from __future__ import annotations

import difflib
from typing import Annotated

import grpc
from pydantic import ConfigDict, Field, field_validator, model_validator

from grpc_resilience_mesh.chaos.registry import ScenarioParams
from grpc_resilience_mesh.services.contracts.limits import MAX_LIMIT
from grpc_resilience_mesh.services.faults.ranges import MAX_AFTER_MESSAGES
from grpc_resilience_mesh.services.topology import REPLICAS

LONGEST_S = 600.0
"""A scenario's own load or wait: at most what a gateway load lasts (LoadSpec.max_duration_s)."""
DEADLINE_S = 60.0
"""A call's deadline: at most a gateway load's (LoadSpec.deadline_s)."""
MOST_RATE_PER_S = 5000.0
"""An open-loop rate: at most the load generator's (LoadSpec.rate_per_s)."""
LockMs = Annotated[int, Field(ge=100, le=60_000, description="[100, 60000]: NOTIFY_LOCK_MS's min")]
StalledMs = Annotated[
    int, Field(ge=50, le=60_000, description="[50, 60000]: NOTIFY_STALLED_INTERVAL_MS's min")
]


class Pool(ScenarioParams):
    """The backend's declared pool, as its policy declares it (PoolPolicy's ranges), with at
    least one worker: a pool of 0 has no capacity to be a multiple of."""

    workers: int = Field(ge=1, le=10_000, description="[1, 10000]: as a policy's, and >= 1")
    service_time_s: float = Field(gt=0, le=60, description="(0, 60]: as a policy's")


class CriticalityParams(ScenarioParams):
    """criticality: a CRITICAL/SHEDDABLE mix, open loop at a multiple of the pool's capacity."""

    pool: Pool
    rate_x_capacity: float = Field(default=3.0, gt=0, le=20, description="(0, 20]: as a load's")
    critical_share: float = Field(
        default=0.25, gt=0, le=1, description="(0, 1]: every 1/share-th call is CRITICAL"
    )
    duration_s: float = Field(
        default=6.0, gt=0, le=LONGEST_S, description="(0, 600]: as long as a load may last"
    )
    warmup_s: float = Field(default=1.0, ge=0, description="[0, duration_s): what is left out")
    deadline_s: float = Field(
        default=0.5, gt=0, le=DEADLINE_S, description="(0, 60], at most duration_s"
    )
    mark: bool = Field(default=True, description="false: no resilience-criticality (all CRITICAL)")

    @property
    def capacity_per_s(self) -> float:
        """Every replica's workers over the service time."""
        return REPLICAS["recommendation"] * self.pool.workers / self.pool.service_time_s

    @model_validator(mode="after")
    def _fits(self) -> CriticalityParams:
        if self.warmup_s >= self.duration_s:
            raise ValueError(
                f"warmup_s {self.warmup_s:g} must be below duration_s {self.duration_s:g} "
                "(nothing would be measured)"
            )
        if self.deadline_s > self.duration_s:
            raise ValueError(
                f"deadline_s {self.deadline_s:g} must be at most duration_s "
                f"{self.duration_s:g} (what the scenario's load lasts)"
            )
        rate = self.rate_x_capacity * self.capacity_per_s
        if rate > MOST_RATE_PER_S:
            raise ValueError(
                f"rate_x_capacity x the pool's capacity = {rate:g} calls/s, at most "
                f"{MOST_RATE_PER_S:g} (the load generator's open-loop rate)"
            )
        return self


class StreamCutParams(ScenarioParams):
    """stream-cut: `streams` reads, one after another, each cut by the FaultAdmin's fault."""

    streams: int = Field(
        default=5, ge=1, le=100, description="[1, 100]: read one at a time, each up to timeout_s"
    )
    limit: int = Field(
        default=10, ge=1, le=MAX_LIMIT, description="[1, 50]: what the gateway accepts"
    )
    timeout_s: float = Field(
        default=5.0, gt=0, le=DEADLINE_S, description="(0, 60]: a load's deadline at most"
    )
    code: str = Field(default="UNAVAILABLE", description="a gRPC error code name")
    after_messages: int = Field(
        default=0, ge=0, le=MAX_AFTER_MESSAGES, description="[0, 1000000]: the FaultAdmin's"
    )
    first_attempt_only: bool = Field(default=False, description="retries get through")

    @field_validator("code")
    @classmethod
    def _code(cls, value: str) -> str:
        names = [n for n in grpc.StatusCode.__members__ if n != "OK"]
        if value not in names:
            close = difflib.get_close_matches(value, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(names)})"
            raise ValueError(f"{value[:40]!r} is not a gRPC error code name{hint}")
        return value


class BackoffCase(ScenarioParams):
    """One receipt refused by SMTP with `code`, `times` times (or always)."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)  # `550`

    name: str = Field(min_length=1, max_length=40, description="the case's row")
    code: int = Field(ge=400, le=599, description="[400, 599]: an SMTP refusal")
    times: int | None = Field(default=None, ge=1, le=100, description="[1, 100]; null: always")
    metric_prefix: str = Field(
        default="", pattern=r"^[a-z0-9_]{0,20}$", description="before each metric's name"
    )


class ReceiptBackoffParams(ScenarioParams):
    """receipt-backoff: each case's attempts against the configured schedule."""

    attempts: int = Field(
        default=5, ge=1, le=20, description="[1, 20]: the waits double; the last at most 600 s"
    )
    backoff_s: float = Field(ge=0, le=60, description="[0, 60]: RECEIPT_BACKOFF_S's min")
    jitter: float = Field(default=0.0, ge=0, le=1, description="[0, 1]: RECEIPT_BACKOFF_JITTER")
    cases: list[BackoffCase] = Field(
        min_length=1, max_length=10, description="1 to 10 receipts retried side by side"
    )

    @model_validator(mode="after")
    def _ends(self) -> ReceiptBackoffParams:
        last = self.backoff_s * (2 ** (self.attempts - 1) - 1)
        if last > LONGEST_S:
            raise ValueError(
                f"the last of attempts {self.attempts} starts {last:g} s after the first "
                f"(backoff_s x (2^(attempts-1) - 1)), at most {LONGEST_S:g} s"
            )
        return self


class ReceiptThroughputParams(ScenarioParams):
    """receipt-throughput: `jobs` jobs of `job_s` each on one worker."""

    jobs: int = Field(
        default=30,
        ge=1,
        le=1000,
        description="[1, 1000]: 30 show the waves; each is a job held in Redis and a receipt",
    )
    job_s: float = Field(default=0.1, gt=0, le=10, description="(0, 10]: SMTP's hold per receipt")
    concurrency: int = Field(
        ge=1, le=100, description="[1, 100]: NOTIFY_CONCURRENCY (>= 1), one worker's loop"
    )
    rate_max: int = Field(
        default=0, ge=0, le=1000, description="[0, 1000]: NOTIFY_RATE_MAX; 0: no limiter"
    )
    rate_window_s: float = Field(
        default=1.0, ge=0.001, le=60, description="[0.001, 60]: NOTIFY_RATE_DURATION_MS >= 1"
    )

    @property
    def theory_s(self) -> float:
        """The jobs' time by the concurrency, and by the limiter when there is one."""
        theory = -(-self.jobs // self.concurrency) * self.job_s
        if self.rate_max:  # the limiter lets rate_max jobs start per window: the last starts late
            windows = -(-self.jobs // self.rate_max) - 1
            theory = max(theory, windows * self.rate_window_s + self.job_s)
        return theory

    @model_validator(mode="after")
    def _ends(self) -> ReceiptThroughputParams:
        if self.theory_s > LONGEST_S:
            raise ValueError(
                f"jobs {self.jobs} of job_s {self.job_s:g} at concurrency {self.concurrency} "
                f"take {self.theory_s:g} s in theory, at most {LONGEST_S:g} s"
            )
        return self


class DuplicateEnqueueParams(ScenarioParams):
    """duplicate-enqueue: one receipt job enqueued `copies` more times."""

    copies: int = Field(default=3, ge=1, le=100, description="[1, 100]: one is the lesson")
    settle_s: float = Field(
        default=1.0, ge=0, le=DEADLINE_S, description="[0, 60]: a wait for a duplicate to show"
    )


class StallParams(ScenarioParams):
    """The drill workers of poison-job and false-stall."""

    # workers + (max_stalled + 1) deaths = at most 21 starts, within stalls.MAX_STARTS (30)
    workers: int = Field(default=2, ge=1, le=10, description="[1, 10]: restarted as they die")
    lock_ms: LockMs = 1000
    stalled_interval_ms: StalledMs = 250
    max_stalled: int = Field(
        default=1, ge=0, le=10, description="[0, 10]: NOTIFY_MAX_STALLED; k+1 workers die"
    )
    timeout_s: float = Field(
        default=60.0, gt=0, le=LONGEST_S, description="(0, 600]: as long as a load may last"
    )


class PoisonJobParams(StallParams):
    """poison-job: a job that kills its worker among `jobs` ordinary ones."""

    jobs: int = Field(default=10, ge=1, le=100, description="[1, 100]: the ordinary ones")


class FalseStallParams(StallParams):
    """false-stall: one job whose handler blocks for `block_s`."""

    timeout_s: float = Field(
        default=30.0, gt=0, le=LONGEST_S, description="(0, 600]: as long as a load may last"
    )
    block_s: float = Field(
        gt=0, le=DEADLINE_S, description="(0, 60]: a few locks' worth shows the stall"
    )
    offload: bool = Field(default=False, description="block in a thread, not the loop")


class WorkerCrashParams(ScenarioParams):
    """worker-crash: a worker holding `charges` jobs killed mid-send."""

    charges: int = Field(default=5, ge=1, le=100, description="[1, 100]: the victim's jobs")
    lock_ms: LockMs = 2000
    stalled_interval_ms: StalledMs = 250
    smtp_latency_ms: int = Field(
        default=3000, ge=0, le=60_000, description="[0, 60000]: SMTP held, so the kill lands"
    )
