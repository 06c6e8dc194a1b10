"""`four-panel.png`: a panel per variant, each titled with its published, measured and
modelled outcome; only the four-panel experiment draws it."""

from __future__ import annotations

from pathlib import Path

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.metastable.model import simulate
from grpc_resilience_mesh.chaos.metastable.outcome import model_metrics
from grpc_resilience_mesh.chaos.metastable.panel_plot import four_panel_figure
from grpc_resilience_mesh.chaos.metastable.panels import FOUR_PANEL, system_for
from grpc_resilience_mesh.chaos.report.plots import plot
from grpc_resilience_mesh.chaos.results import (
    ExperimentResult,
    FaultEvent,
    PhaseResult,
    VariantResult,
)
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome


def _measured_like_the_model(name: str) -> ExperimentResult:
    """Each variant's outcomes as the model's seed-3 run served them (good homes only)."""
    path, exp = load_experiment(name)
    result = ExperimentResult(name, Path(path), exp)
    for variant in exp.variants:
        system = system_for(exp, variant)
        run = simulate(system, 3)
        outcomes = [
            Outcome(rpc="home", code="OK", latency_s=0.0, started_s=t) for t in run.done.times_s
        ]
        timeline = [
            FaultEvent(system.trigger.start_s, "slowdown", True),
            FaultEvent(system.trigger.stop_s, "slowdown", False),
        ]
        phase = PhaseResult(
            LoadResult(outcomes),
            Snapshot(),
            model_metrics(system, run),
            timeline,
            timeline_t0_s=0.0,
        )
        v = VariantResult(variant, variant.policy)
        v.phases["fault"] = phase
        result.variants.append(v)
    return result


def test_the_four_panel_draws_each_panel_with_its_three_outcomes(tmp_path: Path) -> None:
    result = _measured_like_the_model(FOUR_PANEL)
    assert tmp_path / "four-panel.png" in plot(result, tmp_path)
    fig = four_panel_figure(result)
    assert fig is not None
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == [
        "baseline: published recovered, measured recovered, model recovered",
        "tipping: published tipped, measured tipped, model tipped",
        "shorter-trigger: published recovered, measured recovered, model recovered",
        "less-load: published recovered, measured recovered, model recovered",
    ]


def test_another_recovery_experiment_draws_no_four_panel() -> None:
    result = _measured_like_the_model(FOUR_PANEL)
    result.name = "metastable-retry-storm"
    assert four_panel_figure(result) is None
