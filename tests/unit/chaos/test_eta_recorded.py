"""The demo's "about N min left" replayed over recorded runs (recorded_demo_runs.json: each
experiment's measured seconds, in the order the demo runs them), with a fake clock: at every
line a piped run prints (one each PLAIN_EVERY_S of the run), the estimate against the true time
left, and the line as printed."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.run.capacity_use import all_mixes
from grpc_resilience_mesh.chaos.run.eta import Eta, about
from grpc_resilience_mesh.chaos.run.measured import MEASURED, Measured, short_title
from grpc_resilience_mesh.chaos.run.plan import CALIBRATION_S, Planned, plan
from grpc_resilience_mesh.cli.chaos_progress import PLAIN_EVERY_S

RUNS = json.loads((Path(__file__).parent / "recorded_demo_runs.json").read_text())["runs"]
IDLE, LOADED, FRESH, *AGAIN = RUNS
"""IDLE: 2026-12-04, before most demo forms changed (only its list of experiments is read);
LOADED: 8 sessions on 2 cores; FRESH: the first of three `make demo` runs on fresh clones of the
catalogue as it is, back to back on an idle machine, the run measured.py's figures come from;
AGAIN: the other two."""

WITHIN = 0.2
"""Issue 46: every progress line within 20% of the time left."""
UNDER_S = 10.0
"""Below this the line says "under 10 s left", which no rounding can make 20% exact."""


def _demo(run: dict[str, Any]) -> list[tuple[str, Experiment]]:
    return [(n, _load(n)) for n, _ in run["seconds"]]


@functools.cache
def _load(name: str) -> Experiment:
    return load_experiment(name, short_sweep=True)[1]


def _plan(run: dict[str, Any], measured: tuple[Measured, ...] = MEASURED) -> list[Planned]:
    return plan(_demo(run), xds=False, xds_runs=run["xds_runs"], measured=measured)


def probed_then_s(experiments: list[tuple[str, Experiment]]) -> list[float]:
    """The capacity probe's seconds each experiment of a recorded run took: every run recorded
    here probed every mix of every gateway load once (before issue 46 item 2 probed only the
    mixes something reads: capacity_use.py)."""
    probed: set[tuple[str, ...]] = set()
    out = []
    for _, exp in experiments:
        mixes = set() if exp.scenario is not None else all_mixes(exp)
        if not exp.load.capacity_per_experiment:
            mixes -= probed
        probed |= mixes
        out.append(len(mixes) * CALIBRATION_S)
    return out


def fitted_on(run: dict[str, Any]) -> tuple[Measured, ...]:
    """measured.py's table as `run` alone would give it: each experiment's seconds, less the
    restarts the files plan for it in that run and the capacity probe it ran (a run marked
    `"probes": "read"` probed only what the plan plans, capacity_use.py)."""
    demo = _demo(run)
    planned = _plan(run, measured=())
    if run.get("probes") == "read":
        return tuple(
            Measured(short_title(exp), p.loads_s, took - p.restarts_s - p.capacity_s)
            for (_, exp), p, (_, took) in zip(demo, planned, run["seconds"], strict=True)
        )
    return tuple(
        Measured(short_title(exp), p.loads_s, took - p.restarts_s - probe_s)
        for (_, exp), p, probe_s, (_, took) in zip(
            demo, planned, probed_then_s(demo), run["seconds"], strict=True
        )
    )


def replay(run: dict[str, Any], planned: list[Planned]) -> list[tuple[str, float, float]]:
    """(where, estimate, truth) at each line a piped run prints, the clock faked."""
    took = [seconds for _, seconds in run["seconds"]]
    eta, out = Eta.of(planned), list[tuple[str, float, float]]()
    started, i, now = 0.0, 0, PLAIN_EVERY_S
    while True:
        while i < len(took) and started + took[i] <= now:
            eta.finished(took[i])
            started, i = started + took[i], i + 1
        if i == len(took):
            return out
        where = f"[{now:.0f} s] {run['seconds'][i][0]}"
        out.append((where, eta.left_s(now - started), sum(took) - now))
        now += PLAIN_EVERY_S


def shown_s(line: str) -> float:
    """The seconds an about() line says ('about 2 min 30 s left' -> 150)."""
    minutes = re.search(r"(\d+) min", line)
    seconds = re.search(r"(\d+) s left", line)
    return (int(minutes[1]) * 60 if minutes else 0) + (int(seconds[1]) if seconds else 0)


def _off(lines: list[tuple[str, float, float]]) -> list[str]:
    """Every line whose printed estimate is more than WITHIN off the truth (UNDER_S up)."""
    return [
        f"{where}: {about(estimate)} ({estimate:.0f} s), {truth:.0f} s left"
        for where, estimate, truth in lines
        if truth >= UNDER_S and abs(shown_s(about(estimate)) - truth) > WITHIN * truth
    ]


def test_every_line_of_the_fresh_clone_run_is_within_20_percent() -> None:
    # issue 46: "about 8 min left" at 5 s with 376 s left (+26%), the files' plan alone. FRESH
    # ran the forms cut since (CUT_SINCE) as they were: those are planned with its own figures,
    # every other experiment with what measured.py ships.
    theirs = {m.title: m for m in fitted_on(FRESH)}
    shipped = tuple(theirs[m.title] if m.title in CUT_SINCE else m for m in MEASURED)
    lines = replay(FRESH, _plan(FRESH, measured=shipped))
    assert len(lines) >= 60  # 311 s, a line each 5 s
    assert _off(lines) == []


@pytest.mark.parametrize("again", AGAIN, ids=["second", "third"])
def test_the_figures_of_one_fresh_clone_run_hold_on_the_next_two(again: dict[str, Any]) -> None:
    lines = replay(again, _plan(again))
    assert len(lines) >= 60
    assert _off(lines) == []


@pytest.mark.parametrize(
    ("fitted", "replayed"),
    [(AGAIN[1], FRESH), (AGAIN[0], AGAIN[1])],
    ids=["third->first", "second->third"],
)
def test_figures_measured_on_one_run_hold_on_another_they_were_not_fitted_on(
    fitted: dict[str, Any], replayed: dict[str, Any]
) -> None:
    # leave one out: FRESH's figures are what measured.py ships, fitted on another run here
    lines = replay(replayed, _plan(replayed, measured=fitted_on(fitted)))
    assert _off(lines) == []


CUT_SINCE: set[str] = set()
"""Demo forms cut after FRESH ran, each measured alone in its new form (measured.py): none."""


def test_the_shipped_figures_are_the_fresh_clone_runs() -> None:
    # a demo form changed since: drop its entry, or measure it again and record the run
    assert {m for m in MEASURED if m.title not in CUT_SINCE} <= set(fitted_on(FRESH))


def test_every_shipped_figure_is_of_the_demo_form_the_files_give_now() -> None:
    planned = {m.title: m.planned_s for m in fitted_on(FRESH)}
    stale = [m for m in MEASURED if abs(planned[m.title] - m.planned_s) >= 0.05]
    assert stale == []
    assert CUT_SINCE <= {m.title for m in MEASURED}


def test_an_experiment_whose_demo_form_changed_falls_back_to_its_files_count() -> None:
    poison = _load("poison-job")
    (measured,) = plan([("poison-job", poison)])
    changed = poison.model_copy(update={"expected_s": 40.0})
    (counted,) = plan([("poison-job", changed)])
    assert measured.measured and measured.loads_s == 8.0  # the fresh clone's run
    assert not counted.measured and counted.loads_s == 40.0


@pytest.mark.parametrize("idle", AGAIN, ids=["second", "third"])
def test_on_an_idle_machine_the_estimate_is_never_half_the_truth(idle: dict[str, Any]) -> None:
    for where, estimate, truth in replay(idle, _plan(idle)):
        assert estimate >= 0.8 * truth, f"{where}: {estimate:.0f} s estimated, {truth:.0f} s left"
        assert estimate <= 2 * truth + 10, f"{where}: {estimate:.0f} s estimated, {truth:.0f} left"


def test_on_a_loaded_machine_the_estimate_learns_the_machine_and_beats_the_plan() -> None:
    # the plan knows nothing of the machine: load average 14-16 took 744 s for a 379 s plan
    planned = _plan(LOADED)
    took = [seconds for _, seconds in LOADED["seconds"]]
    eta = Eta.of(planned)
    assert eta.left_s(0.0) == pytest.approx(sum(p.total_s for p in planned))
    for i, seconds in enumerate(took):
        for part in (0.0, 0.5) if i >= 3 else ():  # from the 4th experiment: start, middle
            truth = sum(took[i:]) - seconds * part
            plan_alone = max(planned[i].total_s - seconds * part, 0) + sum(
                p.total_s for p in planned[i + 1 :]
            )
            left = eta.left_s(seconds * part)
            assert abs(left - truth) < abs(plan_alone - truth), (
                f"{LOADED['seconds'][i][0]} +{seconds * part:.0f} s: {left:.0f} s estimated, "
                f"the plan {plan_alone:.0f}, {truth:.0f} left"
            )
        eta.finished(seconds)


def test_a_fresh_clone_plans_no_xds_variant_it_will_skip() -> None:
    experiments = _demo(IDLE)
    built, fresh = plan(experiments, measured=()), plan(experiments, xds_runs=False, measured=())
    sources = next(i for i, p in enumerate(built) if p.name == "fault-sources")
    assert fresh[sources].variants == built[sources].variants - 1  # xds-abort: no mesh-xds
    assert sum(p.restarts for p in fresh) == 0 < sum(p.restarts for p in built)
    assert sum(p.total_s for p in fresh) < sum(p.total_s for p in built)
