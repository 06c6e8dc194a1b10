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


async def test_windows_sit_on_the_fault_timeline_not_on_the_first_request(
    exp: Experiment,
) -> None:
    # The schedule starts at 100.0 on the requests' clock and the load 1 s later (a loaded
    # runner's start): the proxy is down from 2 to 6 s on the timeline, i.e. 102-106, and every
    # checkout then fails, every other one succeeds. Counted from the first request, the window
    # would sit at 103-107: 10 failures outside it and 10 successes inside.
    load = LoadResult(elapsed_s=8.0)
    for i in range(80):
        at = 101.0 + i / 10
        down = 102.0 <= at < 106.0
        code, status = ("UNAVAILABLE", "") if down else ("OK", "SUCCEEDED")
        load.outcomes.append(Outcome("checkout", code, 0.01, status=status, started_s=at))
    phase = PhaseResult(load, Snapshot(), {}, timeline_t0_s=100.0)
    phase.timeline += [FaultEvent(2.0, "down", True), FaultEvent(6.0, "down", False)]
    target = Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={})
    measured = await CHECKS["flapping"](CheckContext(target, exp, exp.variants[0], phase))
    assert measured["requests_while_down"] == 40
    assert measured["errors_while_down"] == 40
    assert measured["errors_while_up"] == 0
    assert measured["recover_max_s"] == pytest.approx(0.01)
