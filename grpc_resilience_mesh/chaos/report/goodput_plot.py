"""`goodput.png` for an experiment with the `recovery` check: goodput over time per variant,
the trigger shaded, the declared capacity, its half, and each variant's 95% of its own
pre-trigger level drawn across, so the time to come back (or not) can be read off."""

from __future__ import annotations

from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.report.plot_parts import legend
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.scenarios.goodput import Completions, trigger_window
from grpc_resilience_mesh.chaos.scenarios.recovery_check import BACK_FRACTION, LOW_FRACTION

COLOURS = ("tab:red", "tab:blue", "tab:green", "tab:purple")


def goodput_figure(result: ExperimentResult) -> Figure | None:
    """None when the experiment does not ask for the recovery check or nothing was measured."""
    if "recovery" not in result.experiment.checks:
        return None
    runs = [v for v in result.variants if "fault" in v.phases and v.phases["fault"].load.outcomes]
    if not runs:
        return None
    fig = Figure(figsize=(9, 3.8), layout="constrained")
    ax = fig.subplots()
    capacity = 0.0
    for colour, v in zip(COLOURS * len(runs), runs, strict=False):
        phase = v.phases["fault"]
        done = Completions.of(phase.load.outcomes, phase.timeline_t0_s)
        xs, ys = zip(*done.series(), strict=True)
        ax.step(xs, ys, where="post", color=colour, lw=1.4, label=v.variant.name)
        level = phase.metrics.get("pre_trigger_goodput_per_s")
        if level:
            ax.axhline(BACK_FRACTION * level, color=colour, ls=":", lw=0.9)
        capacity = phase.metrics.get("declared_capacity_per_s", capacity)
        window = trigger_window(phase.timeline)
        if window is not None and v is runs[0]:
            ax.axvspan(*window, color="tab:orange", alpha=0.15, label="trigger", gid="trigger")
    if capacity:
        ax.axhline(capacity, color="black", lw=0.9, label="declared capacity")
        ax.axhline(LOW_FRACTION * capacity, color="grey", ls="--", lw=0.9, label="half capacity")
    ax.set_xlabel("seconds since the fault schedule started (0.5 s bins)")
    ax.set_ylabel("homes served in full / s")
    ax.set_title(
        "goodput over time (dotted: 95% of each variant's pre-trigger level)",
        fontsize=9,
        loc="left",
    )
    legend(ax, outside=True)
    fig.suptitle(f"{result.name}: goodput before, during and after the trigger", fontsize=10)
    return fig
