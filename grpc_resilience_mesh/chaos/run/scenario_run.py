"""A scenario's variants: one variant's run, and every variant side by side where the scenario
declares them independent (registry.Scenario.variants_together).

Side by side, an experiment takes its longest variant instead of the sum of all (poison-job and
false-stall wait mostly on locks, stall checks and worker start-ups, not on a core). The policy
is swapped once, for every variant together, so they must all run the same one: an experiment
whose variants differ in policy, overrides, faults or xDS runs them one after another."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from grpc_resilience_mesh.chaos.experiment.model import Experiment, Variant
from grpc_resilience_mesh.chaos.registry import SCENARIOS, ScenarioContext
from grpc_resilience_mesh.chaos.results import PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult


class Runner(Protocol):
    """What a scenario's run needs of the runner (runner.Runner; named here, not imported: the
    runner imports this module)."""

    target: Target
    progress: Callable[[str, int, int], None]

    async def prepare_variant(
        self, name: str, path: Path, exp: Experiment, variant: Variant
    ) -> VariantResult: ...


async def run_scenario(
    runner: Runner, exp: Experiment, variant: Variant, result: VariantResult
) -> VariantResult:
    """The scenario run for one variant, its metrics and rows as the variant's fault phase."""
    assert exp.scenario is not None
    scenario = SCENARIOS[exp.scenario]
    params = scenario.parse({**exp.params, **variant.params})  # checked at load already
    ctx = ScenarioContext(runner.target, exp, variant, params, runner.progress)
    outcome = await scenario(ctx)
    phase = PhaseResult(LoadResult(), Snapshot(), dict(outcome.metrics))
    phase.rows = outcome.rows
    result.phases["fault"] = phase
    return result


def side_by_side(exp: Experiment) -> bool:
    """Whether `exp`'s variants run at once: its scenario says they may, and one policy swap
    serves them all (the same policy, no overrides, faults or xDS of their own)."""
    if exp.scenario is None or not SCENARIOS[exp.scenario].variants_together:
        return False
    first = exp.variants[0]
    return len(exp.variants) > 1 and all(
        v.policy == first.policy and not v.overrides and not v.faults and not v.xds
        for v in exp.variants
    )


async def run_side_by_side(
    runner: Runner, name: str, path: Path, exp: Experiment
) -> tuple[list[VariantResult], str]:
    """Every variant of `exp` at once, on the policy the first one prepared; each variant's
    result in the file's order and the first failure's line ('' when none failed). A variant
    that fails leaves the others to finish (each stops its own workers)."""
    first = await runner.prepare_variant(name, path, exp, exp.variants[0])
    if first.skipped or first.error:  # what stops one stops all: one policy for them all
        return [
            VariantResult(v, first.policy, error=first.error, skipped=first.skipped)
            for v in exp.variants
        ], ""
    runs = [run_scenario(runner, exp, v, VariantResult(v, first.policy)) for v in exp.variants]
    results, aborted = [], ""
    for variant, outcome in zip(
        exp.variants, await asyncio.gather(*runs, return_exceptions=True), strict=True
    ):
        if isinstance(outcome, VariantResult):
            results.append(outcome)
            continue
        if not isinstance(outcome, Exception):  # a cancellation: the run is being stopped
            raise outcome
        why = f"{type(outcome).__name__}: {outcome}"
        results.append(VariantResult(variant, variant.policy, error=why))
        aborted = aborted or f"{variant.name} failed: {why}"
    return results, aborted
