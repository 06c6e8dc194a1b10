"""The plots of a report, built as matplotlib Figures (tests inspect them before they are saved).

Load experiments: `latency.png`, every request's wait on one y axis shared by every panel (log
scale when the waits spread over more than SPREAD_FOR_LOG), a panel per variant (and per RPC
when the load mixes them), the fault window shaded, breaker moves marked; `calls.png`, the
calls that reached the dependency, with the seed's figure on each bar it has one for;
`goodput.png` with the `recovery` check (goodput_plot.py), and for the metastability lab's
four-panel `four-panel.png` (chaos/metastable/panel_plot.py).
Scenario experiments draw what they measure (job_plots.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.metastable.panel_plot import four_panel_figure
from grpc_resilience_mesh.chaos.report.breaker_marks import BreakerMove, breaker_moves
from grpc_resilience_mesh.chaos.report.goodput_plot import goodput_figure
from grpc_resilience_mesh.chaos.report.job_plots import scenario_figures
from grpc_resilience_mesh.chaos.report.plot_parts import (
    bars_with_reference,
    legend,
    number,
    reference_values,
)
from grpc_resilience_mesh.chaos.report.sweep_plot import sweep_figure
from grpc_resilience_mesh.chaos.results import ExperimentResult, FaultEvent, VariantResult
from grpc_resilience_mesh.loadgen.in_process import Outcome

SPREAD_FOR_LOG = 20.0
"""max/min of the waits above which latency.png uses a log scale."""
REFERENCE_COUNTS = ("dependency_calls", "bulkhead_rejections", "breaker_rejections", "retries")
"""Counters calls.png draws when the seed measured them too."""
FAULT, OVERLOAD = "tab:red", "tab:purple"
KINDS = {"ok": "tab:blue", "degraded": "tab:orange", "error": "tab:red"}
MOVE_STYLE = {
    "opened": ("tab:red", "--"),
    "half-open": ("tab:orange", ":"),
    "closed": ("tab:green", "-."),
}


def plot(result: ExperimentResult, out_dir: Path, traces_dir: Path | None = None) -> list[Path]:
    """Build and save the experiment's figures; the paths written."""
    if result.experiment.scenario is not None:
        figures = scenario_figures(result)
    elif result.experiment.sweep is not None:
        figures = {"sweep.png": sweep_figure(result)} if loaded_runs(result) else {}
    else:
        runs = loaded_runs(result)
        moves = breaker_moves(traces_dir, _loads(runs)) if traces_dir and runs else {}
        figures = (
            {"latency.png": latency_figure(result, moves), "calls.png": calls_figure(result)}
            if runs
            else {}
        )
        goodput = goodput_figure(result)
        if goodput is not None:
            figures["goodput.png"] = goodput
        panels = four_panel_figure(result)
        if panels is not None:
            figures["four-panel.png"] = panels
    paths = []
    for name, fig in figures.items():
        fig.savefig(out_dir / name, dpi=90)
        paths.append(out_dir / name)
    return paths


def loaded_runs(result: ExperimentResult) -> list[VariantResult]:
    return [v for v in result.variants if "fault" in v.phases and v.phases["fault"].load.outcomes]


def _loads(runs: list[VariantResult]) -> dict[str, list[Outcome]]:
    """Every measured load by "variant/phase" (the recovery phase shows breakers closing)."""
    return {
        f"{v.variant.name}/{name}": phase.load.outcomes
        for v in runs
        for name, phase in v.phases.items()
        if phase.load.outcomes
    }


def latency_figure(result: ExperimentResult, moves: dict[str, list[BreakerMove]]) -> Figure:
    runs = loaded_runs(result)
    panels = [
        (v, name, rpc)
        for v in runs
        for name in ("fault", "recovery")
        if name in v.phases and v.phases[name].load.outcomes
        for rpc in _rpcs(v)
    ]
    fig = Figure(figsize=(9, 1.7 * len(panels) + 0.8), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, sharex=True, sharey=True)[:, 0]
    waits: list[float] = []
    for ax, (v, name, rpc) in zip(axes, panels, strict=True):
        phase = v.phases[name]
        outcomes = phase.load.outcomes
        t0 = min(o.started_s for o in outcomes)
        mine = [o for o in outcomes if rpc is None or o.rpc == rpc]
        for kind, colour in KINDS.items():
            pts = [(o.started_s - t0, o.latency_s * 1000) for o in mine if _kind(o) == kind]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.scatter(xs, ys, s=6, color=colour, label=kind)
                waits += ys
        if name == "fault":
            end_s = max(o.started_s - t0 + o.latency_s for o in outcomes)
            overload = not result.experiment.faults_for(v.variant)
            shade(ax, phase.timeline, end_s, overload)
        mark_moves(ax, moves.get(f"{v.variant.name}/{name}", []))
        title = (
            v.variant.name + (f": {rpc}" if rpc else "") + (f" ({name})" if name != "fault" else "")
        )
        ax.set_title(f"{title} - user wait per request", fontsize=9, loc="left")
        legend(ax, outside=True)
    positive = [w for w in waits if w > 0]
    log = bool(positive) and max(positive) / min(positive) > SPREAD_FOR_LOG
    for ax in axes:
        ax.set_ylabel("ms (log)" if log else "ms")
    if log:
        axes[0].set_yscale("log")
    axes[-1].set_xlabel("seconds since the phase's load started")
    fig.suptitle(f"{result.name}: every request's wait, one scale for all", fontsize=10)
    return fig


def _kind(o: Outcome) -> str:
    return ("degraded" if o.degraded else "ok") if o.code == "OK" else "error"


def _rpcs(v: VariantResult) -> list[str | None]:
    """One panel per RPC when the load mixes them (checkout must not hide among homes)."""
    rpcs = sorted({o.rpc for o in v.phases["fault"].load.outcomes})
    return [*rpcs] if len(rpcs) > 1 else [None]


def shade(ax: Axes, timeline: list[FaultEvent], end_s: float, overload: bool) -> None:
    """Red while a fault was on; purple over the whole load when the load itself is the fault."""
    if overload:
        ax.axvspan(0, end_s, color=OVERLOAD, alpha=0.08, label="overload", gid="fault-window")
        return
    opened: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    for event in timeline:
        if event.on:
            opened.setdefault(event.what, event.at_s)
        elif event.what in opened:
            spans.append((opened.pop(event.what), min(event.at_s, end_s)))
    spans += [(start, end_s) for start in opened.values()]
    for i, (start, stop) in enumerate(sorted(spans)):
        label = "fault active" if i == 0 else None
        ax.axvspan(start, stop, color=FAULT, alpha=0.12, label=label, gid="fault-window")


def mark_moves(ax: Axes, moves: Sequence[BreakerMove]) -> None:
    """A vertical line per breaker move, one legend entry per kind of move."""
    shown: set[str] = set()
    for move in moves:
        colour, style = MOVE_STYLE[move.to]
        label = None if move.to in shown else f"breaker {move.to}"
        shown.add(move.to)
        ax.axvline(move.at_s, color=colour, ls=style, lw=1, label=label, gid=f"breaker-{move.to}")


def calls_figure(result: ExperimentResult) -> Figure:
    runs = loaded_runs(result)
    refs = reference_values(result)
    names = [v.variant.name for v in runs]
    metrics = [
        m
        for m in REFERENCE_COUNTS
        if m == "dependency_calls" or any(number(refs.get(n, {}).get(m)) is not None for n in names)
    ]
    fig = Figure(figsize=(9, 3.2), layout="constrained")
    ax = fig.subplots()
    bars_with_reference(
        ax, names, metrics, {v.variant.name: v.phases["fault"].metrics for v in runs}, refs
    )
    dep = result.experiment.dependency
    ax.set_ylabel(f"calls ({dep})")
    ax.set_title(
        f"calls that reached {dep} during the fault (dashed: the seed's figure)",
        fontsize=9,
        loc="left",
    )
    return fig
