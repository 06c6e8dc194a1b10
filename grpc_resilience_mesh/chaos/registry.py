"""The registries of named checks (`checks: [ledger]`) and scenarios (`scenario:` key).

A leaf: it holds the registries and their types and imports no other chaos module when it is
imported. The built-in checks and scenarios are declared as data in
grpc_resilience_mesh/chaos/scenarios/declarations.py (name, metrics, params model, and the
`module:function` that implements each); the loader
(grpc_resilience_mesh/chaos/experiment/loading.py) needs only that, and the implementation
(channels, the launcher, BullMQ) is imported when a run first calls it, so `mesh chaos validate`
loads none of it.

A check measures what load outcomes and counters cannot, after the fault phase, and declares
the metrics it adds. A scenario gets the running target, the experiment and the variant (with
its merged `params`), does its own injecting and measuring, and returns the metrics the
experiment's expectations read, plus optional timed samples for the report. Faults it injects
it must remove itself (the runner still resets every proxy and app fault afterwards).

Both declare their metrics (a scenario: a fixed list, or a function of the params when they name
some), so an expectation naming anything else is refused before the mesh starts. A scenario also
declares its params as a model (grpc_resilience_mesh/chaos/scenarios/params.py): each variant's
merged params are validated when the experiment is loaded, and the scenario reads the typed model
the runner built from them, never a raw dict.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from grpc_resilience_mesh.chaos.experiment.model import Experiment, Variant
    from grpc_resilience_mesh.chaos.results import PhaseResult
    from grpc_resilience_mesh.chaos.run.target import Target


@dataclass
class CheckContext:
    """What a check may look at: the target, the experiment, and the phase just measured."""

    target: Target
    experiment: Experiment
    variant: Variant
    phase: PhaseResult


CheckFn = Callable[[CheckContext], Awaitable[dict[str, float]]]


def implementation(where: str) -> Any:
    """What `module:name` names, its module imported now (Python caches it after the first)."""
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Check:
    """A registered check and the metrics it adds: known before it runs, so an experiment naming a
    metric no check of its adds is refused at load
    (grpc_resilience_mesh/chaos/experiment/metric_names.py)."""

    name: str
    fn: CheckFn | str
    """The function, or the `module:function` imported when the check first runs."""
    metrics: frozenset[str]

    async def __call__(self, ctx: CheckContext) -> dict[str, float]:
        fn = cast(CheckFn, implementation(self.fn)) if isinstance(self.fn, str) else self.fn
        measured = await fn(ctx)
        undeclared = sorted(set(measured) - self.metrics)
        if undeclared:
            raise RuntimeError(f"check {self.name} measured undeclared metrics {undeclared}")
        return measured


CHECKS: dict[str, Check] = {}


def check(name: str, metrics: Iterable[str]) -> Callable[[CheckFn], CheckFn]:
    """Register a check under `name`, with every metric it may add."""

    def register(fn: CheckFn) -> CheckFn:
        CHECKS[name] = Check(name, fn, frozenset(metrics))
        return fn

    return register


def declare_check(name: str, metrics: Iterable[str], where: str) -> None:
    """Declare a check by the `module:function` that implements it, imported when it runs."""
    CHECKS[name] = Check(name, where, frozenset(metrics))


class ScenarioParams(BaseModel):
    """A scenario's params: unknown keys refused, every number bounded, read-only once built.
    Without a model of its own, a scenario takes no params."""

    model_config = ConfigDict(extra="forbid", frozen=True)


P = TypeVar("P", bound=ScenarioParams)


@dataclass
class ScenarioContext:
    """What a scenario may use."""

    target: Target
    experiment: Experiment
    variant: Variant
    params: ScenarioParams
    progress: Callable[[str, int, int], None] = field(default=lambda label, done, total: None)
    """progress(label, done, total): the runner's callback, so the run's display moves."""

    def params_as(self, kind: type[P]) -> P:
        """The params as the scenario's own model (the one it registered)."""
        if not isinstance(self.params, kind):
            raise TypeError(f"params are {type(self.params).__name__}, not {kind.__name__}")
        return self.params


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
    fn: ScenarioFn | str
    """The function, or the `module:function` imported when the scenario first runs."""
    declared: DeclaredMetrics
    params: type[ScenarioParams] = ScenarioParams
    variants_together: bool = False
    """Its variants may run side by side (grpc_resilience_mesh/chaos/run/scenario_run.py): each
    on a queue and processes of its own, every bound of each set by its own timers, so an
    experiment takes its longest variant rather than their sum."""

    def parse(self, raw: Mapping[str, Any]) -> ScenarioParams:
        """The experiment's params merged with a variant's, validated (pydantic's
        ValidationError names each bad field)."""
        return self.params.model_validate(dict(raw))

    def metrics(self, params: Mapping[str, Any]) -> frozenset[str]:
        names = self.declared(params) if callable(self.declared) else self.declared
        return frozenset(names)

    async def __call__(self, ctx: ScenarioContext) -> ScenarioResult:
        fn = cast(ScenarioFn, implementation(self.fn)) if isinstance(self.fn, str) else self.fn
        result = await fn(ctx)
        undeclared = sorted(set(result.metrics) - self.metrics(ctx.params.model_dump()))
        if undeclared:
            raise RuntimeError(f"scenario {self.name} measured undeclared metrics {undeclared}")
        return result


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    name: str, metrics: DeclaredMetrics, params: type[ScenarioParams] = ScenarioParams
) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register a scenario under `name`, with the metrics it returns and its params' model."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        declared = metrics if callable(metrics) else tuple(metrics)
        SCENARIOS[name] = Scenario(name, fn, declared, params)
        return fn

    return register


def declare_scenario(
    name: str,
    metrics: DeclaredMetrics,
    params: type[ScenarioParams],
    where: str,
    variants_together: bool = False,
) -> None:
    """Declare a scenario by the `module:function` that implements it, imported when it runs."""
    declared = metrics if callable(metrics) else tuple(metrics)
    SCENARIOS[name] = Scenario(name, where, declared, params, variants_together)
