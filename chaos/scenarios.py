"""Named scenarios: experiments driven by code instead of gateway load (`scenario:` key).

A scenario gets the running target, the experiment and the variant (with its merged
`params`), does its own injecting and measuring, and returns the metrics the experiment's
expectations read, plus optional timed samples for the report. Faults it injects it must
remove itself (the runner still resets every proxy and app fault afterwards).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaos.experiment import Experiment, Variant
    from chaos.runner import Target


@dataclass
class ScenarioContext:
    """What a scenario may use."""

    target: Target
    experiment: Experiment
    variant: Variant
    params: dict[str, Any]


@dataclass
class ScenarioResult:
    """The metrics a scenario measured and rows worth showing (label -> values)."""

    metrics: dict[str, float]
    rows: list[dict[str, Any]] = field(default_factory=list)


Scenario = Callable[[ScenarioContext], Awaitable[ScenarioResult]]

SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    """Register a scenario under `name`."""

    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        return fn

    return register


from chaos.jobs import experiments as _jobs  # noqa: E402,F401 - registers the job scenarios
