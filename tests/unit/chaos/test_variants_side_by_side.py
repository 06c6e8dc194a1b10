"""A scenario that declares its variants independent has them run at once (poison-job and
false-stall: a queue and workers of their own each); any other, or one whose variants need
policies of their own, one after another."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment, Variant
from grpc_resilience_mesh.chaos.registry import (
    SCENARIOS,
    Scenario,
    ScenarioContext,
    ScenarioResult,
)
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.scenario_run import side_by_side
from grpc_resilience_mesh.chaos.run.target import Target

WAIT_S = 5.0
"""How long a variant waits to see the others in flight: long past a variant's start in this
process (microseconds), a bound so that variants run one after another fail, not hang."""


class Meeting:
    """Variants that each wait, bounded, until every variant has started."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.started: list[str] = []
        self.all_in = asyncio.Event()

    async def __call__(self, ctx: ScenarioContext) -> ScenarioResult:
        self.started.append(ctx.variant.name)
        if len(self.started) == self.expected:
            self.all_in.set()
        if ctx.variant.name == "broken":
            raise RuntimeError("its workers never started")
        try:
            await asyncio.wait_for(self.all_in.wait(), WAIT_S)
        except TimeoutError:
            return ScenarioResult({"met": 0.0})
        return ScenarioResult({"met": float(len(self.started))})


@pytest.fixture
def meeting() -> Iterator[Meeting]:
    fn = Meeting(expected=3)
    SCENARIOS["test-meeting"] = Scenario("test-meeting", fn, ("met",), variants_together=True)
    try:
        yield fn
    finally:
        SCENARIOS.pop("test-meeting")


def _experiment(*names: str, **variant: Any) -> Experiment:
    variants = [Variant(name=n, **variant) for n in names]
    return Experiment(title="t", hypothesis="h", scenario="test-meeting", variants=variants)


def _runner(tmp_path: Path) -> Runner:
    return Runner(Target("127.0.0.1:1", None, {}, {}, state_dir=tmp_path))


async def test_independent_variants_run_at_once(meeting: Meeting, tmp_path: Path) -> None:
    exp = _experiment("one", "two", "three")
    result = await _runner(tmp_path).run("meeting", tmp_path / "meeting.yaml", exp)
    # one after another, the first would wait out WAIT_S alone and measure 0
    met = {v.variant.name: v.phases["fault"].metrics["met"] for v in result.variants}
    assert met == {"one": 3.0, "two": 3.0, "three": 3.0}
    assert not result.aborted


async def test_a_variant_that_fails_leaves_the_others_measured(
    meeting: Meeting, tmp_path: Path
) -> None:
    exp = _experiment("one", "broken", "two")
    result = await _runner(tmp_path).run("meeting", tmp_path / "meeting.yaml", exp)
    assert [v.variant.name for v in result.variants] == ["one", "broken", "two"]
    assert result.variants[1].error == "RuntimeError: its workers never started"
    assert result.aborted == "broken failed: RuntimeError: its workers never started"
    assert [v.phases["fault"].metrics["met"] for v in (result.variants[0], result.variants[2])] == [
        3.0,
        3.0,
    ]


def test_variants_that_need_a_policy_each_run_one_after_another(meeting: Meeting) -> None:
    assert side_by_side(_experiment("one", "two"))
    assert not side_by_side(_experiment("alone"))
    one, other = Variant(name="one"), Variant(name="two", policy="none")
    differ = Experiment(title="t", hypothesis="h", scenario="test-meeting", variants=[one, other])
    assert not side_by_side(differ)
    assert not side_by_side(_experiment("one", "two", overrides={"edge_defaults": {}}))
    SCENARIOS["test-meeting"] = Scenario("test-meeting", meeting, ("met",))
    assert not side_by_side(_experiment("one", "two"))


@pytest.mark.parametrize(
    ("name", "together"),
    [
        ("poison-job", True),  # a queue and a pool of workers per variant, bounds from locks
        ("false-stall", True),
        ("receipt-throughput", False),  # its concurrency-10 bound is 900 ms of one machine
        ("receipt-backoff", False),  # the SMTP sink's script is one for the whole mesh
    ],
)
def test_the_job_experiments_that_run_their_variants_at_once(name: str, together: bool) -> None:
    assert side_by_side(load_experiment(name)[1]) is together
