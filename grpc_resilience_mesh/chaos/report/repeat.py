"""Verdicts that repeat: an experiment run N times, each expectation's spread and held count.

Pure functions of the runs' results (grpc_resilience_mesh/chaos/results.py): for each expectation
the minimum, median and maximum of what was measured across the runs, how many runs held it, and how
many were void (the variant met no fault). Tables show a figure as `median [min-max]`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from grpc_resilience_mesh.chaos.results import ExperimentResult


@dataclass(frozen=True)
class Spread:
    """One expectation across the runs."""

    variant: str
    phase: str
    metric: str
    bound: str
    why: str
    values: tuple[float | None, ...]
    held: int
    void: int

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def measured(self) -> list[float]:
        return [v for v in self.values if v is not None]

    @property
    def low(self) -> float | None:
        return min(self.measured, default=None)

    @property
    def median(self) -> float | None:
        return statistics.median(self.measured) if self.measured else None

    @property
    def high(self) -> float | None:
        return max(self.measured, default=None)

    @property
    def always(self) -> bool:
        return self.held == self.runs

    def shown(self) -> str:
        return spread_text(self.measured)


def _num(value: float) -> str:
    return f"{value:.4g}"


def spread_text(values: Sequence[float]) -> str:
    """`median [min-max]`; one value (or all equal) shows alone; none shows n/a."""
    if not values:
        return "n/a"
    med, low, high = statistics.median(values), min(values), max(values)
    if low == high:
        return _num(med)
    return f"{_num(med)} [{_num(low)}-{_num(high)}]"


def spreads(runs: Sequence[ExperimentResult]) -> list[Spread]:
    """Each expectation of the experiment across `runs` (the runs of one experiment, in order;
    a run that stopped before an expectation's variant counts it as unmeasured, not held)."""
    if not runs:
        return []
    out = []
    for i, verdict in enumerate(runs[-1].verdicts):
        found = [r.verdicts[i] if i < len(r.verdicts) else None for r in runs]
        out.append(
            Spread(
                verdict.variant,
                verdict.phase,
                verdict.metric,
                verdict.bound,
                verdict.why,
                tuple(v.measured if v is not None else None for v in found),
                sum(1 for v in found if v is not None and v.passed),
                sum(1 for v in found if v is not None and v.void),
            )
        )
    return out


def metric_values(
    runs: Sequence[ExperimentResult], variant: str, phase: str, metric: str
) -> list[float]:
    """One metric of one variant's phase, from every run that measured it."""
    found = []
    for run in runs:
        for v in run.variants:
            ph = v.phases.get(phase) if v.variant.name == variant else None
            if ph is not None and metric in ph.metrics:
                found.append(ph.metrics[metric])
    return found
