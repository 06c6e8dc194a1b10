"""Named scenarios: experiments driven by code instead of gateway load (`scenario:` key).

A scenario gets the running target, the experiment and the variant (with its merged
`params`), does its own injecting and measuring, and returns the metrics the experiment's
expectations read, plus optional timed samples for the report. Faults it injects it must
remove itself (the runner still resets every proxy and app fault afterwards).

Each scenario declares the metrics it returns (a fixed list, or a function of the params when
they name some), so an expectation naming anything else is refused before the mesh starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
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
    progress: Callable[[str, int, int], None] = field(default=lambda label, done, total: None)
    """progress(label, done, total): the runner's callback, so the run's display moves."""


@dataclass
class ScenarioResult:
    """The metrics a scenario measured and rows worth showing (label -> values)."""

    metrics: dict[str, float]
    rows: list[dict[str, Any]] = field(default_factory=list)


ScenarioFn = Callable[[ScenarioContext], Awaitable[ScenarioResult]]
DeclaredMetrics = Iterable[str] | Callable[[Mapping[str, Any]], Iterable[str]]


@dataclass(frozen=True)
class Scenario:
    """A registered scenario and the metrics it returns for given params."""

    name: str
    fn: ScenarioFn
    declared: DeclaredMetrics

    def metrics(self, params: Mapping[str, Any]) -> frozenset[str]:
        names = self.declared(params) if callable(self.declared) else self.declared
        return frozenset(names)

    async def __call__(self, ctx: ScenarioContext) -> ScenarioResult:
        result = await self.fn(ctx)
        undeclared = sorted(set(result.metrics) - self.metrics(ctx.params))
        if undeclared:
            raise RuntimeError(f"scenario {self.name} measured undeclared metrics {undeclared}")
        return result


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, metrics: DeclaredMetrics) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register a scenario under `name`, with the metrics it returns."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        SCENARIOS[name] = Scenario(name, fn, metrics if callable(metrics) else tuple(metrics))
        return fn

    return register


from chaos.jobs import experiments as _jobs  # noqa: E402,F401 - registers the job scenarios
