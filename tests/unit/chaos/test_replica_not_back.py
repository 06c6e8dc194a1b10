"""replica-loss's miss says what was not back and how long it took, instead of `n/a`."""

from __future__ import annotations

import time
from pathlib import Path

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR
from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.chaos.results import (
    ExperimentResult,
    FaultEvent,
    PhaseResult,
    VariantResult,
)
from grpc_resilience_mesh.chaos.run.measure import evaluate
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.scenarios.replicas import replicas
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome

PATH = EXPERIMENTS_DIR / "replica-loss.yaml"


def _phase(served_at: dict[str, float]) -> PhaseResult:
    t0 = time.monotonic() - 60.0
    # 7 s of load from t0; the kill at 1.0 s, the restart begun at 2.5 s (the fault's stop_s):
    # the timeline's off is when restart_service returned, once the process reported SERVING.
    outcomes = [Outcome("home", "OK", 0.01, started_s=t0 + i * 0.025) for i in range(280)]
    off = served_at.get("profile-2", 2.5)
    timeline = [FaultEvent(1.0, "profile-2: kill -9", True), FaultEvent(off, "profile-2", False)]
    phase = PhaseResult(LoadResult(outcomes), Snapshot(), {}, timeline)
    phase.served_at = served_at
    return phase


async def _check(phase: PhaseResult, tmp_path: Path) -> tuple[dict[str, float], ExperimentResult]:
    _, exp = load_experiment(str(PATH))
    variant = exp.variants[0]
    target = Target("127.0.0.1:1", None, {}, {}, state_dir=tmp_path)
    (tmp_path / "traces").mkdir()
    found = await replicas(CheckContext(target, exp, variant, phase))
    phase.metrics.update(found)
    result = ExperimentResult("replica-loss", PATH, exp)
    result.variants.append(VariantResult(variant, "full", {"fault": phase}))
    return found, result


async def test_a_replica_that_served_after_the_load_says_when(tmp_path: Path) -> None:
    found, result = await _check(_phase({"profile-2": 9.3}), tmp_path)
    assert "back_after_s" not in found
    verdict = next(v for v in evaluate(result) if v.metric == "back_after_s")
    assert not verdict.passed
    assert verdict.shown == (
        "n/a: profile-2 was not back before the load ended at 7.0 s: its restart at 2.5 s took"
        " 6.8 s to report SERVING"
    )


async def test_a_replica_serving_in_time_but_not_called_says_how_long_it_had(
    tmp_path: Path,
) -> None:
    _, result = await _check(_phase({"profile-2": 4.0}), tmp_path)
    verdict = next(v for v in evaluate(result) if v.metric == "back_after_s")
    assert verdict.shown == (
        "n/a: profile-2 served no call in the 3.0 s of load left after its restart at 2.5 s"
        " took 1.5 s to report SERVING"
    )


async def test_a_replica_that_never_served_says_so(tmp_path: Path) -> None:
    _, result = await _check(_phase({}), tmp_path)
    verdict = next(v for v in evaluate(result) if v.metric == "back_after_s")
    assert verdict.shown == "n/a: profile-2 never reported SERVING after its restart at 2.5 s"
