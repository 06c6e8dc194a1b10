"""The built-in checks and scenarios as data: each one's name, the metrics it declares, its params'
model, and the `module:function` that implements it (grpc_resilience_mesh/chaos/registry.py).

Loading an experiment needs only this: its names, its expectations' metrics and its params
are checked against these declarations. The implementations hold channels, the launcher,
BullMQ and Redis; they are imported when a run first calls one, so `mesh chaos validate`,
`list` and `plan` load none of them. A unit test holds each declaration to its implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grpc_aio_resilience import SHED_REASONS
from grpc_resilience_mesh.chaos.registry import declare_check, declare_scenario
from grpc_resilience_mesh.chaos.scenarios.params import (
    CriticalityParams,
    DuplicateEnqueueParams,
    FalseStallParams,
    PoisonJobParams,
    ReceiptBackoffParams,
    ReceiptThroughputParams,
    StreamCutParams,
    WorkerCrashParams,
)
from grpc_resilience_mesh.chaos.scenarios.trace_rule_names import METRIC_PREFIX, RULES

CHECKED_METRIC = "traces_checked"
"""The traces the `traces` check read (every rule is judged on the same ones)."""
TRACE_METRICS = (CHECKED_METRIC, *(METRIC_PREFIX + r for r in RULES))

STREAM_OUTCOMES = ("committed", "retried-before-first-message", "partial")
"""What a cut stream's trace shows its retry did
(grpc_resilience_mesh/chaos/scenarios/stream_cut.py)."""
CRITICALITY_KINDS = ("critical", "sheddable")
"""The two kinds of call the criticality scenario mixes."""
CRITICALITY_PER_KIND = ("offered_per_s", "goodput_per_s", "goodput_vs_offered", "p99_ms", "refused")
"""The criticality scenario's metrics for each kind, after the kind's name."""
BACKOFF_PER_CASE = ("attempts_made", "delivered", "last_attempt_s", "computed_last_s")
"""receipt-backoff's metrics for each case, under the case's `metric_prefix`."""


def backoff_metrics(params: Mapping[str, Any]) -> set[str]:
    """Each case's metrics under its `metric_prefix`, and the schedule's two errors."""
    cases = params.get("cases")
    prefixes = (
        {str(c.get("metric_prefix", "")) for c in cases or [] if isinstance(c, Mapping)}
        if isinstance(cases, list)
        else set()
    )
    return {p + m for p in prefixes for m in BACKOFF_PER_CASE} | {
        "max_drift_ms",
        "max_step_error_ms",
    }


def _checks() -> None:
    declare_check(
        "ledger",
        (
            *("checkouts", "acknowledged", "pending", "pending_resolved", "pending_unresolved"),
            *("ledger_charges", "lost", "duplicates", "client_errors"),
        ),
        "grpc_resilience_mesh.chaos.scenarios.checks:ledger",
    )
    declare_check(
        "quiescence",
        ("in_flight_after_200ms",),
        "grpc_resilience_mesh.chaos.scenarios.checks:quiescence",
    )
    declare_check(
        "cancellation",
        ("overrun_calls", "overrun_within_100ms", "overrun_over_100ms"),
        "grpc_resilience_mesh.chaos.scenarios.checks:cancellation",
    )
    declare_check(
        "flapping",
        (
            *("outages", "requests_while_down", "errors_while_down", "errors_while_up"),
            *("recover_max_s", "recover_mean_s"),
            *("breaker_to_open", "breaker_to_half_open", "breaker_to_closed"),
        ),
        "grpc_resilience_mesh.chaos.scenarios.checks:flapping",
    )
    declare_check(
        "replicas",
        (
            *("failed", "failed_attempts", "ejections", "first_ejection_s"),
            *("moved_after_s", "back_after_s"),
        ),
        "grpc_resilience_mesh.chaos.scenarios.replicas:replicas",
    )
    declare_check(
        "recovery",
        (
            *("declared_capacity_per_s", "pre_trigger_goodput_per_s", "trigger_goodput_per_s"),
            *("after_goodput_per_s", "after_goodput_vs_capacity", "after_trigger_s"),
            *("back_after_trigger_s", "back", "low_after_trigger_s", "attempts_per_call"),
            *("abandoned_work", "pool_refused", "throttled"),
        ),
        "grpc_resilience_mesh.chaos.scenarios.recovery_check:recovery",
    )
    declare_check(
        "fault_trace",
        (
            *("trace_requests", "trace_attempts", "trace_failed_attempts"),
            *("trace_failed_unserved", "trace_fault_events"),
            *("trace_lead_ms_p50", "trace_lag_ms_p50"),
        ),
        "grpc_resilience_mesh.chaos.scenarios.fault_trace:fault_trace",
    )
    declare_check(
        "traces",
        TRACE_METRICS,
        "grpc_resilience_mesh.chaos.scenarios.trace_check:trace_rules_check",
    )


def _scenarios() -> None:
    declare_scenario(
        "stream-cut",
        (
            *("streams", "complete", "partial", "failed_empty", "items_min", "items_max"),
            *("flag_matches", "dep_calls", "retries", "retries_skipped_committed"),
            *("faults_injected", "breaker_rejections", "traces_found"),
            *(f"trace_{o.replace('-', '_')}" for o in STREAM_OUTCOMES),
        ),
        StreamCutParams,
        "grpc_resilience_mesh.chaos.scenarios.stream_cut:stream_cut",
    )
    declare_scenario(
        "criticality",
        (
            *(f"shed_{r}" for r in SHED_REASONS),
            "declared_capacity_per_s",
            "offered_per_s",
            *(f"{k}_{m}" for k in CRITICALITY_KINDS for m in CRITICALITY_PER_KIND),
            "goodput_vs_declared",
        ),
        CriticalityParams,
        "grpc_resilience_mesh.chaos.scenarios.criticality:criticality",
    )
    _job_scenarios()


def _job_scenarios() -> None:
    receipts = "grpc_resilience_mesh.chaos.scenarios.receipts"
    declare_scenario(
        "receipt-backoff",
        backoff_metrics,
        ReceiptBackoffParams,
        f"{receipts}.experiments:receipt_backoff",
    )
    declare_scenario(
        "receipt-throughput",
        ("measured_ms", "theory_ms", "completed", "overhead_ms"),
        ReceiptThroughputParams,
        f"{receipts}.experiments:receipt_throughput",
    )
    declare_scenario(
        "duplicate-enqueue",
        ("enqueued", "jobs", "runs", "receipts", "queued_after"),
        DuplicateEnqueueParams,
        f"{receipts}.experiments:duplicate_enqueue",
    )
    declare_scenario(
        "poison-job",
        (
            *("max_stalled", "poison_runs", "poison_pickups", "poison_stalls", "poison_failed"),
            *("reason_readable", "poison_receipts", "failed_after_s"),
            *("others", "others_completed", "others_pickups", "others_receipts"),
            "others_duplicates",
        ),
        PoisonJobParams,
        f"{receipts}.stalls:poison_job",
        variants_together=True,
    )
    declare_scenario(
        "false-stall",
        (
            *("block_ms", "lock_ms", "pickups", "stalls", "rerun_after_s"),
            *("completed", "failed_stalled", "receipts"),
        ),
        FalseStallParams,
        f"{receipts}.stalls:false_stall",
        variants_together=True,
    )
    declare_scenario(
        "worker-crash",
        (
            *("charges", "completed", "ran_twice", "receipts", "duplicates", "missing"),
            *("recovered_after_kill_s", "recovered_after_start_s"),
        ),
        WorkerCrashParams,
        f"{receipts}.worker_crash:worker_crash",
    )


_checks()
_scenarios()
