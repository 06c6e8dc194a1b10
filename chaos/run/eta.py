"""How long the rest of a run will take: each experiment's expected duration from its loads,
scaled by how the finished experiments compared with their own expectation."""

from __future__ import annotations

import math

from chaos.experiment.model import Experiment, LoadSpec

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


def kind(exp: Experiment) -> str:
    """Experiments whose estimates err alike: gateway loads, or a scenario (jobs)."""
    return "load" if exp.scenario is None else "scenario"


class Eta:
    """Remaining time of a run of experiments, refined as each one finishes: each kind of
    experiment by how the finished ones of its kind compared with their expectation (a job
    scenario's error says nothing about a gateway load's), by all finished ones before any
    of its kind has."""

    def __init__(self, expected: list[float], kinds: list[str] | None = None) -> None:
        self.expected = expected
        self.kinds = kinds or [""] * len(expected)
        self.actual: list[float] = []

    def finished(self, took_s: float) -> None:
        self.actual.append(took_s)

    def _scale(self, of: str | None) -> float | None:
        done = [
            (self.expected[i], took)
            for i, took in enumerate(self.actual)
            if of is None or self.kinds[i] == of
        ]
        planned = sum(e for e, _ in done)
        return sum(t for _, t in done) / planned if done and planned > 0 else None

    @property
    def scale(self) -> float:
        """Measured over expected for the experiments done so far (1 before the first)."""
        return self._scale(None) or 1.0

    def scale_for(self, i: int) -> float:
        """The scale for experiment `i`: its kind's, else everything's, else 1."""
        return self._scale(self.kinds[i]) or self.scale

    def left_s(self, current_elapsed_s: float) -> float:
        """Seconds left: the rest of the current experiment and all those after it."""
        i = len(self.actual)
        if i >= len(self.expected):
            return 0.0
        current = max(self.expected[i] * self.scale_for(i) - current_elapsed_s, 0.0)
        return current + sum(
            self.expected[j] * self.scale_for(j) for j in range(i + 1, len(self.expected))
        )


def about(seconds: float) -> str:
    """'about 2 min left', 'about 40 s left', 'under 10 s left'."""
    if seconds < 10:
        return "under 10 s left"
    if seconds < 90:
        return f"about {round(seconds / 10) * 10:.0f} s left"
    return f"about {round(seconds / 60):.0f} min left"
