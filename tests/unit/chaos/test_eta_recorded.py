"""The demo's "about N min left" replayed over recorded runs (recorded_demo_runs.json: each
experiment's measured seconds, in the order the demo runs them), with a fake clock: at each
experiment's start and halfway through it, the estimate against the true time left."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.run.eta import Eta
from grpc_resilience_mesh.chaos.run.plan import plan

RUNS = json.loads((Path(__file__).parent / "recorded_demo_runs.json").read_text())["runs"]


def replay(run: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(where, estimate, truth) at each experiment's start and middle, the clock faked."""
    names = [name for name, _ in run["seconds"]]
    took = [seconds for _, seconds in run["seconds"]]
    experiments = [(n, load_experiment(n, short_sweep=True)[1]) for n in names]
    eta = Eta.of(plan(experiments, xds=False, xds_runs=run["xds_runs"]))
    out = []
    for i, seconds in enumerate(took):
        for part in (0.0, 0.5):
            elapsed = seconds * part
            out.append(
                (f"{names[i]} +{elapsed:.0f} s", eta.left_s(elapsed), sum(took[i:]) - elapsed)
            )
        eta.finished(seconds)
    return out


IDLE, LOADED = RUNS


def test_on_an_idle_machine_the_estimate_is_never_half_the_truth() -> None:
    # issue 46: "about 3 min left" with 5 left; the plan overestimates small experiments, and a
    # single ratio learnt from them halved the estimate for the long paced ones after them
    for where, estimate, truth in replay(IDLE):
        assert estimate >= 0.8 * truth, f"{where}: {estimate:.0f} s estimated, {truth:.0f} s left"
        assert estimate <= 2 * truth + 10, f"{where}: {estimate:.0f} s estimated, {truth:.0f} left"


def test_on_a_loaded_machine_the_estimate_learns_the_machine_and_beats_the_plan() -> None:
    # the plan knows nothing of the machine: load average 14-16 took 744 s for a 453 s plan
    planned = [p.total_s for p in _plan(LOADED)]
    took = [seconds for _, seconds in LOADED["seconds"]]
    lines = replay(LOADED)
    assert lines[0][1] == pytest.approx(sum(planned))
    for n, (where, estimate, truth) in enumerate(lines[6:], start=6):  # from the 4th experiment
        i, part = divmod(n, 2)
        plan_alone = max(planned[i] - took[i] * part / 2, 0) + sum(planned[i + 1 :])
        assert abs(estimate - truth) < abs(plan_alone - truth), (
            f"{where}: {estimate:.0f} s estimated, the plan {plan_alone:.0f}, {truth:.0f} left"
        )


def _plan(run: dict[str, Any]) -> list[Any]:
    experiments = [(n, load_experiment(n, short_sweep=True)[1]) for n, _ in run["seconds"]]
    return plan(experiments, xds=False, xds_runs=run["xds_runs"])


def test_a_fresh_clone_plans_no_xds_variant_it_will_skip() -> None:
    experiments = [(n, load_experiment(n, short_sweep=True)[1]) for n, _ in IDLE["seconds"]]
    built, fresh = plan(experiments), plan(experiments, xds_runs=False)
    sources = next(i for i, p in enumerate(built) if p.name == "fault-sources")
    assert fresh[sources].variants == built[sources].variants - 1  # xds-abort: no mesh-xds
    assert sum(p.restarts for p in fresh) == 0 < sum(p.restarts for p in built)
    assert sum(p.total_s for p in fresh) < sum(p.total_s for p in built)
