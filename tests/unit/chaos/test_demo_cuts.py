"""The demo's cut forms (issue 46: `make demo` within 6 minutes): each runs a variant for less
time than `mesh chaos run` does, and with every bound that variant has there, none loosened."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment, ProxyDownFault
from grpc_resilience_mesh.chaos.experiment.planned import planned_loads_s

CUT = {
    "flapping-dependency": "full",  # two outages, not three
    "metastable-retry-storm": "full-adaptive",  # the trigger at 5 s, 15 s of load
    "slow-replica": "ejection",  # 4 s of load
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
