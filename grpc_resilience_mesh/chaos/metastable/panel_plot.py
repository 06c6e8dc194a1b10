"""`four-panel.png`: one panel per variant of the four-panel, as in Huang et al.'s Figure 6:
measured goodput over time, the model's prediction for the same numbers over it, the trigger
shaded, and the published, measured and predicted outcomes in the panel's title."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.metastable.model import simulate
from grpc_resilience_mesh.chaos.metastable.outcome import model_metrics, outcome_word
from grpc_resilience_mesh.chaos.metastable.panels import FOUR_PANEL, PUBLISHED, system_for
from grpc_resilience_mesh.chaos.results import ExperimentResult, VariantResult
from grpc_resilience_mesh.chaos.scenarios.goodput import Completions, trigger_window
from grpc_resilience_mesh.chaos.scenarios.recovery_check import BACK_FRACTION


def _panel(ax: Axes, result: ExperimentResult, run: VariantResult) -> None:
    phase = run.phases["fault"]
    done = Completions.of(phase.load.outcomes, phase.timeline_t0_s)
    xs, ys = zip(*done.series(), strict=True)
    ax.step(xs, ys, where="post", color="tab:blue", lw=1.4, label="measured")
    system = system_for(result.experiment, run.variant)
    modelled = simulate(system, 0)
    mx, my = zip(*modelled.done.series(), strict=True)
    ax.step(mx, my, where="post", color="black", ls="--", lw=0.9, label="model (seed 0)")
    window = trigger_window(phase.timeline)
    if window is not None:
        ax.axvspan(*window, color="tab:orange", alpha=0.15, label="trigger")
    level = phase.metrics.get("pre_trigger_goodput_per_s")
    if level:
        ax.axhline(BACK_FRACTION * level, color="tab:blue", ls=":", lw=0.9)
    name = run.variant.name
    ax.set_title(
        f"{name}: published {PUBLISHED.get(name, '?')}, measured "
        f"{outcome_word(phase.metrics)}, model {outcome_word(model_metrics(system, modelled))}",
        fontsize=8,
        loc="left",
    )
    ax.set_ylim(bottom=0)


def four_panel_figure(result: ExperimentResult) -> Figure | None:
    """None unless this is the four-panel and every panel was measured."""
    runs = [v for v in result.variants if "fault" in v.phases and v.phases["fault"].load.outcomes]
    if result.name != FOUR_PANEL or not runs:
        return None
    fig = Figure(figsize=(10, 6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True, sharey=True).flatten()
    for ax, run in zip(axes, runs, strict=False):
        _panel(ax, result, run)
    axes[0].legend(fontsize=7, loc="lower left")
    for ax in axes[2:]:
        ax.set_xlabel("seconds since the load started (0.5 s bins)")
    for ax in axes[::2]:
        ax.set_ylabel("homes served in full / s")
    fig.suptitle(f"{result.name}: goodput over time, measured and modelled", fontsize=10)
    return fig
