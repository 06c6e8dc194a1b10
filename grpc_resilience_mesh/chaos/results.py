"""What a run measured: fault events, phases, variants, verdicts, and the experiment's result.

A leaf: plain dataclasses, read by the runner, the checks, the reports and the plots. It
imports no other chaos module at run time (the types it names are for the type checker).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grpc_resilience_mesh.chaos.experiment.model import Experiment, Variant
    from grpc_resilience_mesh.client.counters import Snapshot
    from grpc_resilience_mesh.loadgen.in_process import LoadResult


class SteadyStateFailed(RuntimeError):
    """The system was not in its steady state (before or after the faults)."""


@dataclass
class FaultEvent:
    """When (seconds after the load started) a fault went on or off."""

    at_s: float
    what: str
    on: bool


@dataclass
class PhaseResult:
    """One measured load: its outcomes, the counters it moved, and the numbers derived."""

    load: LoadResult
    counters: Snapshot
    metrics: dict[str, float]
    timeline: list[FaultEvent] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Scenario experiments: detail rows for the report (e.g. attempt times)."""
    attempts_while_on: dict[int, float] = field(default_factory=dict)
    """Per toxic or proxy_down (its position in the variant's faults): the attempts sent
    across its edge while it was on (grpc_resilience_mesh/chaos/run/measure.py AttemptsWhileOn)."""
    served_at: dict[str, float] = field(default_factory=dict)
    """Per process a kill fault restarted: when it served again (the timeline's seconds)."""
    timeline_t0_s: float | None = None
    """The monotonic clock's reading the timeline counts from (an outcome's started_s is on
    the same clock), so a fault's times can be placed among the requests exactly: the load
    starts some time after the schedule does (its first calls open their channels)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Per metric a check could not measure: why (shown in the verdict instead of n/a)."""
    broken_traces: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Per trace rule judged (the `traces` check): each trace that broke it, and how."""


@dataclass
class VariantResult:
    """Everything measured for one variant."""

    variant: Variant
    policy: str
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    steady_before: dict[str, float] = field(default_factory=dict)
    steady_after: dict[str, float] = field(default_factory=dict)
    error: str = ""
    skipped: str = ""


@dataclass
class Verdict:
    """One expectation checked against what was measured."""

    variant: str
    phase: str
    metric: str
    measured: float | None
    bound: str
    passed: bool
    why: str = ""
    void: bool = False
    """The variant met no fault (grpc_resilience_mesh/chaos/run/measure.py exposure): neither PASS
    nor FAIL, and not held, since nothing was tested."""
    note: str = ""
    """Why nothing was measured, when the check said (else the value shows as n/a)."""

    @property
    def shown(self) -> str:
        """The measured value, or why there is none."""
        if self.measured is not None:
            return f"{self.measured:.4g}"
        return f"n/a: {self.note}" if self.note else "n/a"

    @property
    def mark(self) -> str:
        return "VOID" if self.void else "PASS" if self.passed else "FAIL"


@dataclass
class ExperimentResult:
    """An experiment's variants, verdicts, and whether its hypothesis held."""

    name: str
    path: Path
    experiment: Experiment
    variants: list[VariantResult] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    aborted: str = ""
    capacity: dict[str, float] = field(default_factory=dict)
    """The run's capacity (measured once per run, or right before this experiment when its
    load has `capacity_per_experiment`): capacity_per_s, capacity_p99_ms."""
    generator_share: float | None = None
    """The load generator's CPU as a share of the mesh's, over the run so far (None: n/a)."""

    repeats: list[ExperimentResult] = field(default_factory=list)
    """With `--repeat N`: every run of this experiment, this one last (empty: ran once)."""
    took_s: float = 0.0
    """The runner's seconds for this run: its journal's start to end (reports outside it)."""

    @property
    def held_once(self) -> bool:
        """This run: not aborted, every expectation passed (a void one did not), every
        variant ran (none skipped, none in error)."""
        return (
            not self.aborted
            and all(v.passed for v in self.verdicts)
            and not any(v.error or v.skipped for v in self.variants)
        )

    @property
    def held(self) -> bool:
        """Held in this run, and in every repeat of it."""
        return self.held_once and all(r.held_once for r in self.repeats)

    @property
    def partial(self) -> str:
        """`N of M variants ran` when a variant was skipped or in error (in any run) and
        what did run missed nothing; "" otherwise. A skipped variant's expectations were never
        judged, so its point of the hypothesis was not tested: neither held nor refuted."""
        runs = self.repeats or [self]
        if any(r.aborted or _missed(r) for r in runs):
            return ""
        ran = min(sum(not (v.skipped or v.error) for v in r.variants) for r in runs)
        unrun = any(v.skipped or v.error for r in runs for v in r.variants)
        return f"{ran} of {len(self.experiment.variants)} variants ran" if unrun else ""

    @property
    def verdict(self) -> str:
        """held, partial (N of M variants ran), or did not hold."""
        if self.held:
            return "held"
        return f"partial ({self.partial})" if self.partial else "did not hold"

    def not_run(self) -> list[str]:
        """Each variant that did not run, in the last run: `name skipped: why` or `name
        error: what`."""
        return [
            f"{v.variant.name} {'skipped' if v.skipped else 'error'}: {v.skipped or v.error}"
            for v in self.variants
            if v.skipped or v.error
        ]


def _missed(result: ExperimentResult) -> bool:
    """An expectation of a variant that ran was missed (a miss outweighs what was skipped)."""
    ran = {v.variant.name for v in result.variants if not (v.skipped or v.error)}
    return any(not v.passed for v in result.verdicts if v.variant in ran)
