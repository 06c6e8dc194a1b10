"""How long the rest of a run will take: each experiment's expected duration from its loads,
scaled by how the finished experiments compared with their own expectation."""

from __future__ import annotations

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.experiment.planned import expected_s as expected_s


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
