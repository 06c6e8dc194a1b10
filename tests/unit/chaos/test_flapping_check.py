"""flapping's recovery time: from each up to the first successful checkout, and an up that never
recovered before the load ended counts as the time left, never as nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.registry import CHECKS, CheckContext
from grpc_resilience_mesh.chaos.results import FaultEvent, PhaseResult
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome

EXPERIMENT = """
title: t
hypothesis: h
steady_state:
  load: {rpc: [checkout], requests: 4}
load: {rpc: [checkout], requests: 10}
checks: [flapping]
variants: [{name: full}]
"""


@pytest.fixture
def exp(tmp_path: Path) -> Experiment:
    path = tmp_path / "exp.yaml"
    path.write_text(EXPERIMENT)
    return load_experiment(str(path))[1]


def checkouts(ok_after_up: list[float], failing_until_s: float) -> LoadResult:
    """A checkout every 0.1 s from 0 to `failing_until_s`, failing, plus successes at given
    times; each takes 10 ms."""
    result = LoadResult(elapsed_s=failing_until_s)
    for i in range(round(failing_until_s * 10) + 1):
        result.outcomes.append(Outcome("checkout", "UNAVAILABLE", 0.01, started_s=i / 10))
    for at in ok_after_up:
        result.outcomes.append(Outcome("checkout", "OK", 0.01, status="SUCCEEDED", started_s=at))
    return result


async def recover_max_s(exp: Experiment, load: LoadResult, ups: list[float]) -> float:
    phase = PhaseResult(load, Snapshot(), {})
    for up in ups:
        phase.timeline += [FaultEvent(up - 1.0, "down", True), FaultEvent(up, "down", False)]
    target = Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={})
    measured = await CHECKS["flapping"](CheckContext(target, exp, exp.variants[0], phase))
    return measured["recover_max_s"]


async def test_each_up_recovers_at_its_first_success(exp: Experiment) -> None:
    load = checkouts(ok_after_up=[2.5, 6.2], failing_until_s=8.0)
    assert await recover_max_s(exp, load, ups=[2.0, 5.0]) == pytest.approx(1.21)


async def test_an_up_never_followed_by_a_success_counts_until_the_load_ended(
    exp: Experiment,
) -> None:
    load = checkouts(ok_after_up=[2.5], failing_until_s=9.0)  # nothing succeeds after 5.0
    assert await recover_max_s(exp, load, ups=[2.0, 5.0]) == pytest.approx(4.01)
