"""Traps made loud: build_pipeline warns, once, of a composition that silently does less than
it says (a method never retried, a breaker one call can open, attempts that outlast the
deadline), with the numbers and the option to change; a sound composition builds silently."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from grpc_aio_resilience import from_dict, traps
from grpc_aio_resilience.description import describe
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_aio_resilience.traps import ResiliencePolicyWarning
from tests.unit.resilience import trap_proto
from tests.unit.resilience.unit_fakes import recording_bus

SOUND: dict[str, Any] = {
    "deadline": {"total_s": 1.0, "attempt_s": 0.3},
    "retry": {"max_attempts": 3},
    "breaker": {"consecutive_failures": 5, "min_calls": 10},
}


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no trap warned yet in this process."""
    monkeypatch.setattr(traps, "_warned", {})
    yield


def policy(**sections: dict[str, Any]) -> EdgePolicy:
    merged = {**SOUND}
    for name, section in sections.items():
        merged[name] = {**merged.get(name, {}), **section}
    return from_dict(EdgePolicy, merged)


def build(edge: EdgePolicy, services: tuple[str, ...] = ()) -> tuple[Pipeline, list[str]]:
    """The pipeline, and the ResiliencePolicyWarning messages its build raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipeline = build_pipeline(
            edge, dependency="ledger", bus=recording_bus()[0], services=services
        )
    return pipeline, [str(w.message) for w in caught if w.category is ResiliencePolicyWarning]


def test_a_sound_composition_builds_without_a_warning() -> None:
    # Payment declares both its methods (Charge by its idempotency key).
    pipeline, warned = build(policy(), ("mesh.v1.PaymentService",))
    assert warned == []
    assert describe(pipeline).traps == ()


def test_a_method_without_idempotency_is_warned_once_with_what_to_declare() -> None:
    _, warned = build(policy(), (trap_proto.register(),))
    assert len(warned) == 1
    assert warned[0].startswith(f"ledger: retry is off for {trap_proto.POST}: no idempotency")
    assert "retry.max_attempts is 3" in warned[0]
    assert "idempotency_level = IDEMPOTENT" in warned[0]
    for declared in (trap_proto.GET, trap_proto.PUT, trap_proto.TRANSFER, trap_proto.WATCH):
        assert declared not in warned[0]


def test_no_retry_configured_means_nothing_is_lost_and_nothing_is_warned() -> None:
    _, warned = build(policy(retry={"max_attempts": 1}), (trap_proto.register(),))
    assert warned == []


def test_a_service_the_descriptor_pool_does_not_know_is_warned() -> None:
    _, warned = build(policy(), ("nowhere.v1.Missing",))
    assert len(warned) == 1
    assert "service nowhere.v1.Missing is not in the protobuf descriptor pool" in warned[0]


def test_a_breaker_one_calls_retries_can_open_is_warned_with_the_numbers() -> None:
    _, warned = build(policy(breaker={"consecutive_failures": 3}))
    assert warned == [
        "ledger: breaker.consecutive_failures (3) <= retry.max_attempts (3): retry sits "
        "outside the breaker, so the attempts of one failing call open the breaker for every "
        "call of its method; set breaker.consecutive_failures above 3 or retry.max_attempts "
        "below 3"
    ]


def test_a_rate_window_one_call_fills_is_warned() -> None:
    _, warned = build(policy(breaker={"consecutive_failures": 0, "min_calls": 2}))
    assert len(warned) == 1
    assert warned[0].startswith("ledger: breaker.min_calls (2) <= retry.max_attempts (3)")
    assert "set breaker.min_calls (and window_size) above 3" in warned[0]


def test_a_breaker_outside_retry_counts_a_call_once_so_it_is_not_warned() -> None:
    edge = policy(breaker={"consecutive_failures": 2, "min_calls": 2})
    _, warned = build(dataclasses.replace(edge, order="breaker-outside-retry"))
    assert warned == []


def test_attempts_that_outlast_the_deadline_are_warned_with_the_fix() -> None:
    _, warned = build(policy(deadline={"total_s": 0.8, "attempt_s": 0.35}))
    assert warned == [
        "ledger: deadline.attempt_s (0.35) x retry.max_attempts (3) = 1.05 s > "
        "deadline.total_s (0.8): calls that time out get 2 full attempts and then 0.1 s at "
        "most for the next, whose timeout is the call's deadline (retry and breaker ignore "
        "it); raise deadline.total_s to 1.05, or lower deadline.attempt_s to 0.266 or "
        "retry.max_attempts to 2"
    ]


def test_attempts_that_exactly_fill_the_deadline_are_not_warned() -> None:
    # 0.1 * 3 is 0.30000000000000004 in floating point: still exactly the budget.
    _, warned = build(policy(deadline={"total_s": 0.3, "attempt_s": 0.1}))
    assert warned == []


def test_a_rebuild_of_the_same_composition_does_not_repeat_the_warning() -> None:
    trapped = policy(deadline={"total_s": 0.8, "attempt_s": 0.35})
    _, first = build(trapped)
    again, repeated = build(trapped)  # a policy swap rebuilds every edge's pipeline
    assert len(first) == 1
    assert repeated == []
    assert [t.kind for t in describe(again).traps] == ["attempts_outlast_deadline"]
    _, changed = build(policy(deadline={"total_s": 0.9, "attempt_s": 0.35}))
    assert len(changed) == 1 and "deadline.total_s (0.9)" in changed[0]


def test_the_memory_of_warned_traps_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traps, "_WARNED_CAP", 2)
    for total_s in (0.8, 0.81, 0.82):
        build(policy(deadline={"total_s": total_s, "attempt_s": 0.35}))
    assert len(traps._warned) == 2
    _, again = build(policy(deadline={"total_s": 0.8, "attempt_s": 0.35}))
    assert len(again) == 1  # the oldest was forgotten, so it is warned again


def test_the_warning_points_at_the_code_that_built_the_pipeline() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_pipeline(
            policy(breaker={"consecutive_failures": 2}),
            dependency="ledger",
            bus=recording_bus()[0],
        )
    assert [w.filename for w in caught] == [__file__]
