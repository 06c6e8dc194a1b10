"""An experiment's loads as its file schedules them, in seconds: what `mesh chaos plan` counts,
the ETA starts from, and loading caps (bounds.MAX_PLANNED_S), before anything starts."""

from __future__ import annotations

import math

from grpc_resilience_mesh.chaos.experiment.bounds import MAX_PLANNED_S
from grpc_resilience_mesh.chaos.experiment.model import Experiment, LoadSpec

OVERHEAD_S = 2.0
"""Per variant: the policy swap, the faults' reset and the backlog settling."""
SCENARIO_VARIANT_S = 3.0
"""A scenario variant sets its own pace: a flat figure for a scenario experiment that does not
declare its `expected_s` (the job experiments do: their workers, locks and timeouts take
10-60 s, five times what this guess gave them)."""
REQUEST_S = 0.1
"""A closed-loop request's guessed latency; the scale corrects it after the first experiment."""


def load_s(spec: LoadSpec) -> float:
    """A load's expected wall time: open loop paces itself, closed loop by its concurrency."""
    if spec.rate_per_s:
        each = spec.requests / spec.rate_per_s
    elif spec.rate_x_capacity is not None:  # open loop at a guessed capacity
        guessed_per_s = spec.capacity_concurrency / REQUEST_S
        each = spec.requests / (guessed_per_s * spec.rate_x_capacity)
    else:
        each = math.ceil(spec.requests / spec.concurrency) * (spec.think_s + REQUEST_S)
    if spec.rate_x_capacity is not None:
        each += spec.capacity_requests / spec.capacity_concurrency * REQUEST_S / 10
    return min(each, spec.max_duration_s) * spec.repeat


def expected_s(exp: Experiment) -> float:
    """The runner's work for `exp`: per variant, steady state before and after, the load under
    fault, the recovery phase, and a fixed overhead."""
    if exp.scenario is not None:
        return exp.expected_s or SCENARIO_VARIANT_S * len(exp.variants)
    steady = load_s(exp.steady_state.load)
    total = 0.0
    for variant in exp.variants:
        fault = exp.load_for(variant)
        recovery = 0.0
        if exp.recovery is not None:
            recovery = exp.recovery.wait_s + load_s(exp.recovery.load or fault)
        total += 2 * steady + load_s(fault) + recovery + OVERHEAD_S
    return total


def pool_s(exp: Experiment) -> float:
    """A sweep's declared service time, which no closed-loop guess knows: per point, its two
    steady-state checks each wait one service time per wave of calls, and the load ends one
    service time after its last call starts."""
    if exp.sweep is None:
        return 0.0
    steady = exp.steady_state.load
    waves = -(-steady.requests // steady.concurrency)
    return len(exp.variants) * (2 * waves + 1) * exp.sweep.service_time_s


def planned_loads_s(exp: Experiment) -> float:
    """Every variant's loads, a sweep's service times included."""
    return expected_s(exp) + pool_s(exp)


def paced_s(spec: LoadSpec) -> float:
    """The part of load_s(spec) its file fixes: an open loop's pace at a declared rate, a
    closed loop's think time. The rest is a guess (REQUEST_S, a capacity not yet measured)."""
    if spec.rate_per_s:
        return load_s(spec)
    if spec.rate_x_capacity is not None:
        return 0.0
    waves = math.ceil(spec.requests / spec.concurrency)
    return min(waves * spec.think_s, spec.max_duration_s) * spec.repeat


def fixed_s(exp: Experiment) -> float:
    """The part of planned_loads_s(exp) its file fixes: paced loads, the recovery's waits, a
    sweep's declared service time. A run's ETA scales this part and the guessed rest each by
    what the finished experiments took (eta.py): on an idle machine the guesses err from 0.3x to
    1.2x of the truth where the paced part holds within 10% (docs/results/catalogue.md)."""
    if exp.scenario is not None:
        return 0.0
    steady = paced_s(exp.steady_state.load)
    total = pool_s(exp)
    for variant in exp.variants:
        fault = exp.load_for(variant)
        total += 2 * steady + paced_s(fault)
        if exp.recovery is not None:
            total += exp.recovery.wait_s + paced_s(exp.recovery.load or fault)
    return total


def too_long(exp: Experiment) -> str | None:
    """Why `exp` plans more than an experiment may (None: it fits)."""
    planned = planned_loads_s(exp)
    if planned <= MAX_PLANNED_S:
        return None
    return (
        f"planned time: {planned / 60:.0f} min for {len(exp.variants)} variants as `mesh chaos "
        f"plan` counts the loads, above the {MAX_PLANNED_S / 60:.0f} min one experiment may "
        "plan (what a CI job or a class can wait for): fewer variants, points or requests"
    )
