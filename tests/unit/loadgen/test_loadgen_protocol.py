"""The runner and the load generator process: the plan goes in whole, records come back
compact, and each record becomes the outcome the user saw, with the runner's own key and
trace id for that request."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.loadgen.in_process import outcome_of, plan_for
from grpc_resilience_mesh.loadgen.protocol import (
    RECORD_FIELDS,
    Plan,
    decode,
    encode_end,
    encode_records,
)


def test_the_plan_survives_the_pipe_with_every_request_chosen_by_the_runner() -> None:
    plan = plan_for("127.0.0.1:1", 4, ("home", "checkout"), concurrency=2, rate_per_s=50.0)
    back = Plan.loads(plan.dumps())
    assert back == plan
    assert [r.rpc for r in back.requests] == ["home", "checkout", "home", "checkout"]
    assert len({r.trace_id for r in back.requests}) == 4  # one trace per request
    assert [bool(r.key) for r in back.requests] == [False, True, False, True]


def test_records_round_trip_and_become_outcomes() -> None:
    plan = plan_for("127.0.0.1:1", 2, ("checkout", "home"))
    records = [
        (0, 10.0, 0.25, "OK", "", "CAPTURED", "ch-1", None, "", "ok-after-retry(1)"),
        (1, 10.5, 0.01, "UNAVAILABLE", "", "", "", 300, "down", ""),
    ]
    assert len(records[0]) == len(RECORD_FIELDS)
    kind, body = decode(encode_records(records))
    assert kind == "R"
    first, second = (outcome_of(plan, r) for r in body)
    assert (first.rpc, first.code, first.status, first.charge_id) == (
        "checkout",
        "OK",
        "CAPTURED",
        "ch-1",
    )
    assert first.key == plan.requests[0].key and first.trace_id == plan.requests[0].trace_id
    assert (second.rpc, second.code, second.pushback_ms, second.detail) == (
        "home",
        "UNAVAILABLE",
        300,
        "down",
    )
    assert second.started_s == 10.5 and second.latency_s == 0.01
    # The fate the answer carried; with none, what the caller alone could tell.
    assert (first.fate, second.fate) == ("ok-after-retry(1)", "failed-not-retryable(UNAVAILABLE)")


def test_a_record_of_a_generator_built_before_fates_gets_the_fate_its_caller_saw() -> None:
    plan = plan_for("127.0.0.1:1", 3)
    records = [
        (0, 1.0, 0.1, "OK", "recommendations:popular", "", "", None, ""),
        (1, 1.0, 2.0, "DEADLINE_EXCEEDED", "", "", "", None, "Deadline Exceeded"),
        (2, 1.0, 0.0, "CLIENT_DROPPED", "", "", "", None, ""),
    ]
    assert [outcome_of(plan, r).fate for r in records] == [
        "ok-degraded(recommendations:popular)",
        "failed-deadline",
        "client-throttled(loadgen)",
    ]


def test_degraded_parts_come_back_as_the_reports_read_them() -> None:
    plan = plan_for("127.0.0.1:1", 1)
    record = (0, 1.0, 0.1, "OK", "recommendations:popular,profile:cache", "", "", None, "")
    assert outcome_of(plan, record).degraded == ("recommendations:popular", "profile:cache")


def test_the_end_line_carries_the_generators_cpu() -> None:
    assert decode(encode_end(1.5, 0.02)) == ("E", {"elapsed_s": 1.5, "cpu_s": 0.02})


def test_anything_else_is_refused() -> None:
    with pytest.raises(ValueError, match="load generator said"):
        decode("Traceback (most recent call last):")
