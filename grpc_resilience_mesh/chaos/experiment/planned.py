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
