"""The recovery check's arithmetic on made-up outcomes: goodput over time, the pre-trigger
level, the time to come back after the trigger, and how long goodput stayed low."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.chaos.results import FaultEvent
from grpc_resilience_mesh.chaos.scenarios.goodput import (
    Completions,
    back_after,
    low_for,
    trigger_window,
)
from grpc_resilience_mesh.chaos.scenarios.recovery_check import recovery_metrics
from grpc_resilience_mesh.loadgen.in_process import Outcome


def _load(rate_per_s: float, seconds: float, served: object) -> list[Outcome]:
    """Calls started on a fixed schedule, each taking 50 ms; `served(t)` says whether the one
    started at t was served in full (else it got the fallback)."""
    n = int(rate_per_s * seconds)
    out = []
    for i in range(n):
        t = 100.0 + i / rate_per_s
        full = served(t - 100.0)  # type: ignore[operator]
        degraded = () if full else ("recommendations:popular",)
        out.append(Outcome("home", "OK", 0.05, degraded, started_s=t))
    return out


def test_a_mesh_that_comes_back_one_second_after_the_trigger() -> None:
    outcomes = _load(70, 40, lambda t: not 10 <= t < 16)
    done = Completions.of(outcomes)
    series = done.series()
    assert series[4][0] == 2.0 and series[4][1] == pytest.approx(70.0) and series[25][1] == 0.0
    metrics = recovery_metrics(done, (10.0, 15.0), capacity=100.0)
    assert metrics["pre_trigger_goodput_per_s"] == pytest.approx(70.0, rel=0.02)
    assert metrics["trigger_goodput_per_s"] < 1.0, "only calls started before it end in it"
    # Served again from 16 s (+50 ms latency). The first 2 s window with >= 95% of 140
    # completions starts 1.0 s after the trigger's end (at most 0.1 s of it empty); the first
    # at half the capacity (100 completions) 0.5 s after it.
    assert metrics["back_after_trigger_s"] == pytest.approx(1.0, abs=0.01)
    assert metrics["back"] == 1.0
    assert metrics["low_after_trigger_s"] == pytest.approx(0.5, abs=0.01)
    assert metrics["after_trigger_s"] == pytest.approx(25.0, abs=0.02)


def test_a_mesh_that_never_comes_back_is_low_until_the_load_ends() -> None:
    outcomes = _load(70, 40, lambda t: t < 10 or 12 <= t < 13)  # a flicker, then down for good
    done = Completions.of(outcomes)
    metrics = recovery_metrics(done, (10.0, 15.0), capacity=100.0)
    assert metrics["back"] == 0.0
    assert metrics["back_after_trigger_s"] == metrics["after_trigger_s"]
    assert metrics["low_after_trigger_s"] == pytest.approx(25.0, abs=0.02)
    assert metrics["after_goodput_vs_capacity"] == 0.0


def test_back_means_back_for_good_a_relapse_restarts_the_clock() -> None:
    outcomes = _load(70, 40, lambda t: not (10 <= t < 15.5 or 18 <= t < 20))
    done = Completions.of(outcomes)
    back = back_after(done, 15.0, level=70.0)
    assert back is not None and back >= 5.0, "the dip at 18-20 s is a relapse"
    assert low_for(done, 15.0, threshold=50.0) < 1.0, "but it was above half at once"


def test_the_trigger_is_the_first_fault_on_and_off_in_the_timeline() -> None:
    timeline = [
        FaultEvent(10.02, "recommendation: service time x3", True),
        FaultEvent(15.01, "recommendation: service time x3", False),
    ]
    assert trigger_window(timeline) == (10.02, 15.01)
    assert trigger_window(timeline[:1]) is None and trigger_window([]) is None


def test_times_count_from_the_fault_schedule_when_the_load_started_late() -> None:
    """The load's first request left 1.5 s after the schedule started (its channels opening):
    the trigger's 10-15 s are the schedule's, so the outage is at 8.5-13.5 s of the load."""
    outcomes = _load(70, 40, lambda t: not 8.5 <= t < 13.5)
    done = Completions.of(outcomes, t0_s=100.0 - 1.5)
    assert done.first_start_s == 1.5 and done.series()[0][0] == 1.5
    metrics = recovery_metrics(done, (10.0, 15.0), capacity=100.0)
    assert metrics["pre_trigger_goodput_per_s"] == pytest.approx(70.0, rel=0.02)
    assert metrics["back_after_trigger_s"] == 0.0
    late = recovery_metrics(Completions.of(outcomes), (10.0, 15.0), capacity=100.0)
    assert late["pre_trigger_goodput_per_s"] < 60, "unaligned, the outage falls before it"
