"""The demo's cut forms (issue 46: `make demo` within 6 minutes): each runs a variant for less
time than `mesh chaos run` does, and with every bound that variant has there, none loosened."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import (
    Experiment,
    KillFault,
    ProxyDownFault,
    SlowdownFault,
)
from grpc_resilience_mesh.chaos.experiment.planned import planned_loads_s

CUT = {
    "flapping-dependency": "full",  # two outages, not three
    "metastable-retry-storm": "full-adaptive",  # the trigger at 5 s, 15 s of load
    "slow-replica": "ejection",  # 4 s of load
    "replica-loss": "ejection",  # 6 s of load (no-ejection too)
    "metastable-four-panel": "tipping",  # the trigger at 3 s, 20 s of load
    "deadline-budget": "full",  # 20 clients: two rounds of the 1 s deadline, not five
    "fault-sources": "toxiproxy-latency",  # 30 clients: 10 rounds of the 100 ms toxic, not 30
}


def _seconds(exp: Experiment) -> dict[str, float]:
    return {v.name: planned_loads_s(exp.model_copy(update={"variants": [v]})) for v in exp.variants}


@pytest.mark.parametrize("name", sorted(CUT))
def test_the_demo_form_is_shorter_and_keeps_every_bound(name: str) -> None:
    _, full = load_experiment(name)
    _, demo = load_experiment(name, short_sweep=True)
    kept = {v.name for v in demo.variants}
    assert demo.expectations == [e for e in full.expectations if e.variant in kept]
    full_s, demo_s = _seconds(full), _seconds(demo)
    assert all(demo_s[v] <= full_s[v] for v in kept)
    assert demo_s[CUT[name]] < full_s[CUT[name]]


def test_the_flapping_demo_still_gives_each_up_more_load_than_its_bound() -> None:
    _, demo = load_experiment("flapping-dependency", short_sweep=True)
    (variant,) = demo.variants
    (fault,) = demo.faults_for(variant)
    (bound,) = [e.max for e in demo.expectations if e.metric == "recover_max_s"]
    assert isinstance(fault, ProxyDownFault) and bound is not None
    assert fault.stop_s is not None and fault.down_s and fault.up_s
    outages = round((fault.stop_s - fault.start_s) / (fault.down_s + fault.up_s) + 0.5)
    assert outages == 2
    assert demo.load_for(variant).max_duration_s - fault.stop_s > bound
    assert fault.up_s > bound


def _bound(exp: Experiment, variant: str, metric: str, side: str = "max") -> float:
    (bound,) = [
        getattr(e, side) for e in exp.expectations if (e.variant, e.metric) == (variant, metric)
    ]
    assert bound is not None
    return float(bound)


def test_the_retry_storm_sends_every_request_at_once_in_the_demo() -> None:
    # one wave of 3 hangs, not two: each request's 3 attempts do not depend on the clients
    _, demo = load_experiment("provider-outage", short_sweep=True)
    (retry_only,) = [v for v in demo.variants if v.name == "retry-only"]
    load = demo.load_for(retry_only)
    assert load.concurrency >= load.requests
    assert _bound(demo, "retry-only", "dependency_calls", "min") == 3 * load.requests


def test_the_replica_loss_demo_sees_a_replica_come_back_as_late_as_its_bound() -> None:
    _, demo = load_experiment("replica-loss", short_sweep=True)
    for variant in demo.variants:
        (kill,) = demo.faults_for(variant)
        load = demo.load_for(variant)
        assert isinstance(kill, KillFault) and kill.stop_s is not None
        assert load.rate_per_s is not None and load.max_duration_s is not None
        sent_s = min(load.requests / load.rate_per_s, load.max_duration_s)
        assert sent_s < 7
        assert sent_s - kill.stop_s - _bound(demo, variant.name, "back_after_s") >= 1.0


def test_the_tipping_panel_keeps_its_premise_window_and_what_its_bound_reads_after() -> None:
    _, demo = load_experiment("metastable-four-panel", short_sweep=True)
    (tipping,) = demo.variants
    (trigger,) = demo.faults_for(tipping)
    load = demo.load_for(tipping)
    assert isinstance(trigger, SlowdownFault) and trigger.stop_s is not None
    assert load.rate_per_s is not None
    assert trigger.start_s - 1.0 >= 2.0  # the pre-trigger level past its 1 s warm-up
    after_s = load.requests / load.rate_per_s - trigger.stop_s
    assert after_s >= _bound(demo, "tipping", "low_after_trigger_s", "min") + 2.0


def test_the_deadline_demo_sends_every_home_its_bounds_count_in_two_rounds() -> None:
    _, full = load_experiment("deadline-budget")
    _, demo = load_experiment("deadline-budget", short_sweep=True)
    (variant,) = demo.variants
    load = demo.load_for(variant)
    assert load.requests == full.load.requests == _bound(demo, "full", "overrun_calls", "min")
    assert -(-load.requests // load.concurrency) == 2
