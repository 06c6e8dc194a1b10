"""Outlier ejection's rules (gRFC A50 + Envoy's consecutive failures) on a fake clock."""

from __future__ import annotations

from typing import Any

from grpc_aio_resilience.events import ReplicaEjected, ReplicaReturned
from grpc_aio_resilience.outlier import OutlierDetector
from grpc_aio_resilience.outlier_policy import OutlierPolicy
from tests.support.fake_clock import FakeClock


def detector(
    replicas: tuple[str, ...] = ("a", "b"), **policy: Any
) -> tuple[OutlierDetector, FakeClock, list[Any]]:
    clock = FakeClock()
    events: list[Any] = []
    found = OutlierDetector(
        "profile", replicas, OutlierPolicy(enabled=True, **policy), clock, events.append
    )
    return found, clock, events


def test_consecutive_failures_eject_at_once_and_a_success_resets_the_count() -> None:
    d, _, events = detector(consecutive_failures=3)
    for failed in (True, True, False, True, True):
        d.record("a", failed)
    assert d.available() == ["a", "b"]
    d.record("a", True)
    assert d.available() == ["b"]
    assert events == [ReplicaEjected("profile", "a", "consecutive_failures", 5.0, 1)]


def test_an_ejection_ends_after_base_time_and_grows_with_each_ejection_up_to_the_cap() -> None:
    d, clock, events = detector(
        consecutive_failures=1, base_ejection_s=5.0, max_ejection_s=12.0, interval_s=100.0
    )
    lasted = []
    for _ in range(4):
        d.record("a", True)
        ejected = events[-1]
        assert isinstance(ejected, ReplicaEjected)
        lasted.append(ejected.ejection_s)
        clock.advance(ejected.ejection_s - 0.01)
        assert d.available() == ["b"]
        clock.advance(0.01)
        assert d.available() == ["a", "b"]
        assert isinstance(events[-1], ReplicaReturned)
    assert lasted == [5.0, 10.0, 12.0, 12.0]


def test_the_multiplier_falls_by_one_per_interval_in_rotation() -> None:
    d, clock, events = detector(
        consecutive_failures=1, base_ejection_s=1.0, max_ejection_s=60.0, interval_s=1.0
    )
    d.record("a", True)
    clock.advance(1.0)
    d.available()  # back; the count stays 1 until an interval passes in rotation
    d.record("a", True)
    assert events[-1].ejection_s == 2.0
    clock.advance(2.0)
    d.available()
    for _ in range(3):  # three intervals in rotation: 2 -> 1 -> 0
        clock.advance(1.0)
        d.available()
    d.record("a", True)
    assert events[-1].ejection_s == 1.0


def test_failure_percentage_is_judged_per_interval_with_enough_volume_on_enough_hosts() -> None:
    d, clock, events = detector(
        consecutive_failures=1000,
        failure_percentage=50,
        request_volume=10,
        minimum_hosts=2,
        interval_s=1.0,
    )
    for i in range(10):
        d.record("a", i % 2 == 0)  # 50% failures, never 2 in a row
        d.record("b", False)
    clock.advance(1.0)
    assert d.available() == ["b"]
    assert events == [ReplicaEjected("profile", "a", "failure_percentage", 5.0, 1)]


def test_too_little_volume_judges_nobody() -> None:
    d, clock, events = detector(consecutive_failures=1000, request_volume=10)
    for _ in range(10):
        d.record("a", True)
    for _ in range(9):
        d.record("b", False)  # only one host reached the volume: minimum_hosts is 2
    clock.advance(1.0)
    assert d.available() == ["a", "b"]
    assert events == []


def test_max_ejected_percent_keeps_one_of_two_replicas_in_rotation() -> None:
    d, _, events = detector(consecutive_failures=1, max_ejected_percent=50)
    d.record("a", True)
    d.record("b", True)
    assert d.available() == ["b"]
    assert [e.replica for e in events] == ["a"]
