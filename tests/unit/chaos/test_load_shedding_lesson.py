"""The load-shedding lesson as the catalogue states it: a backend whose capacity is declared, and
bounds that follow from its configuration, so that the lesson's ordering holds on any machine."""

from __future__ import annotations

from typing import Any

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.experiment.sweep import point_name

EDGE = 0.1
"""The window's edge: the pool's workers finish in clumps of replicas x workers every service
time, and a window of the file's length can cut one clump (20 of 200 calls)."""


def _bound(exp: Experiment, variant: str, side: str) -> float:
    (found,) = [e for e in exp.expectations if e.variant == variant]
    value = found.min if side == "min" else found.max
    assert value is not None
    return value


def _overrides(exp: Experiment, line: str) -> dict[str, Any]:
    variant = next(v for v in exp.variants if v.name.startswith(line + "."))
    return variant.overrides


def _attempt_s(exp: Experiment, line: str) -> float:
    edge = _overrides(exp, line)["edges"]["gateway_to_recommendation"]
    return float(edge["deadline"]["attempt_s"])


@pytest.mark.parametrize("short", [False, True])
def test_the_lesson_runs_on_a_declared_backend_and_its_bounds_order_the_lines(short: bool) -> None:
    _, exp = load_experiment("load-shedding", short_sweep=short)
    sweep = exp.sweep
    assert sweep is not None and sweep.service == "recommendation"
    assert exp.load.rate_x_capacity is None  # no probe of the machine's CPU in any figure
    points = sorted({e.variant.split(".", 1)[1] for e in exp.expectations})
    assert points
    for x in points:
        shedding = _bound(exp, f"shedding.{x}", "min")
        admit_all = _bound(exp, f"no-shedding.{x}", "max")
        assert shedding > admit_all, x  # the lesson's ordering, whatever the machine


def test_the_admit_all_bound_is_the_fifo_queues_mechanism() -> None:
    """A call arriving at t waits (x-1) t - S once the workers are busy, in time only while
    that is at most D - S: the last call in time ends by D x / (x-1)."""
    _, exp = load_experiment("load-shedding")
    sweep = exp.sweep
    assert sweep is not None
    deadline_s = _attempt_s(exp, "no-shedding")
    assert deadline_s == _attempt_s(exp, "shedding")
    window_s = sweep.duration_s - sweep.warmup_s
    for x in sweep.points:
        last_in_time_s = deadline_s * x / (x - 1)
        mechanism = max(0.0, last_in_time_s - sweep.warmup_s) / window_s + EDGE
        assert _bound(exp, point_name("no-shedding", x), "max") == pytest.approx(mechanism)


def test_the_shedding_limit_lets_every_admitted_call_finish_in_time() -> None:
    """An admitted call waits for one of the workers (less than S) and runs S: 2 S within D,
    and the limit is at least the workers, so the pool never idles while calls are offered."""
    _, exp = load_experiment("load-shedding")
    sweep = exp.sweep
    assert sweep is not None
    limit = _overrides(exp, "shedding")["servers"]["recommendation"]["max_in_flight"]
    assert sweep.workers <= limit < 2 * sweep.workers
    assert 2 * sweep.service_time_s < _attempt_s(exp, "shedding")
    window_s = sweep.duration_s - sweep.warmup_s
    clump = sweep.replicas * sweep.workers / (sweep.capacity_per_s * window_s)
    assert clump == pytest.approx(EDGE)
    for x in sweep.points:
        assert _bound(exp, point_name("shedding", x), "min") == pytest.approx(1 - EDGE)
