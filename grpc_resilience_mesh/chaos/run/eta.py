"""How long the rest of a run will take: each experiment's planned seconds (plan.py), the part its
file fixes and the part it guesses each scaled by how the finished experiments compared."""

from __future__ import annotations

from collections.abc import Sequence

from grpc_resilience_mesh.chaos.experiment.planned import expected_s as expected_s
from grpc_resilience_mesh.chaos.run.plan import Planned

PRIOR_WEIGHT_S2 = 1000.0
"""How strongly the fit leans on the plan (both scales 1) against the finished experiments, in
squared seconds: about one experiment of 30 s taking its plan. Replayed over two recorded demos
(tests/unit/chaos/recorded_demo_runs.json), 300 and 3000 erred alike; 0 lets the first short
experiments swing the scales."""


class Eta:
    """Remaining time of a run of experiments, refined as each one finishes.

    Each experiment's plan is two parts (plan.Planned): seconds its file fixes (paced loads,
    waits) or a run measured (measured.py: all its loads), and seconds it guesses (closed-loop
    latency, per-variant overhead, restarts, the capacity probe, a scenario's declared figure).
    What the finished experiments took fits one scale for each part (least squares, pulled toward
    1 by PRIOR_WEIGHT_S2): on an idle machine the guesses run 0.3x-1.2x and the paced part
    holds; on a loaded one both stretch. One ratio for everything let three small overestimated
    experiments early in a run halve the estimate for the long paced ones after them ("about
    3 min left" with 5 left, issue 46)."""

    def __init__(self, planned: Sequence[float], fixed: Sequence[float] | None = None) -> None:
        self.planned = list(planned)
        self.fixed = list(fixed) if fixed is not None else [0.0] * len(self.planned)
        self.actual: list[float] = []
        self._scales = (1.0, 1.0)

    @classmethod
    def of(cls, planned: Sequence[Planned]) -> Eta:
        return cls([p.total_s for p in planned], [p.fixed_s for p in planned])

    def finished(self, took_s: float) -> None:
        self.actual.append(took_s)
        self._scales = self._fit()

    @property
    def scales(self) -> tuple[float, float]:
        """(fixed, guessed): each part's measured over planned so far (1, 1 before the first)."""
        return self._scales

    def _fit(self) -> tuple[float, float]:
        n, w = len(self.actual), PRIOR_WEIGHT_S2
        f = self.fixed[:n]
        g = [self.planned[i] - self.fixed[i] for i in range(n)]
        ff = sum(x * x for x in f) + w
        gg = sum(x * x for x in g) + w
        fg = sum(x * y for x, y in zip(f, g, strict=True))
        fy = sum(x * y for x, y in zip(f, self.actual, strict=True)) + w
        gy = sum(x * y for x, y in zip(g, self.actual, strict=True)) + w
        det = ff * gg - fg * fg
        return (fy * gg - gy * fg) / det, (ff * gy - fg * fy) / det

    def expected_s(self, i: int) -> float:
        """Experiment `i`'s seconds as the run so far predicts them (never below zero)."""
        fixed, guessed = self._scales
        return max(self.fixed[i] * fixed + (self.planned[i] - self.fixed[i]) * guessed, 0.0)

    def left_s(self, current_elapsed_s: float) -> float:
        """Seconds left: the rest of the current experiment and all those after it."""
        i = len(self.actual)
        if i >= len(self.planned):
            return 0.0
        current = max(self.expected_s(i) - current_elapsed_s, 0.0)
        return current + sum(self.expected_s(j) for j in range(i + 1, len(self.planned)))


def about(seconds: float) -> str:
    """'about 7 min left', 'about 2 min 30 s left', 'about 45 s left', 'under 10 s left'.

    The rounding alone errs by at most 2.5 s under a minute, 5 s under 10 min and 30 s above
    (a fifth of the time left at 12.5 s, under a tenth from a minute up): whole minutes from
    90 s made 'about 2 min' of 91 s (+32%), eating the 20% the estimate may err (issue 46)."""
    if seconds < 10:
        return "under 10 s left"
    if seconds < 60:
        return f"about {round(seconds / 5) * 5:.0f} s left"
    if seconds < 600:
        whole = round(seconds / 10) * 10
        return f"about {whole // 60:.0f} min {whole % 60:02.0f} s left".replace(" 00 s", "")
    return f"about {round(seconds / 60):.0f} min left"
