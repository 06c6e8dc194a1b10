"""The receipt experiments' plots: each draws what its scenario measures.

- receipt-backoff -> attempts.png: when each attempt ran against the configured schedule;
- receipt-throughput -> throughput.png: measured time against theory, the seed's beside them;
- worker-crash -> recovery.png: when each job ran again after the kill, against the lock;
- duplicate-enqueue -> dedupe.png: copies enqueued against jobs, runs and receipts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.report.plot_parts import (
    bars_with_reference,
    legend,
    number,
    reference_values,
)
from grpc_resilience_mesh.chaos.results import ExperimentResult, VariantResult


def scenario_figures(result: ExperimentResult) -> dict[str, Figure]:
    """File name -> figure for a scenario experiment (none when nothing was measured)."""
    runs = [v for v in result.variants if "fault" in v.phases]
    if not runs:
        return {}
    scenario = result.experiment.scenario or ""
    name, draw = FIGURES.get(scenario, (f"{scenario}.png", _columns))
    return {name: draw(result, runs)}


def _rows(v: VariantResult) -> list[dict[str, Any]]:
    return v.phases["fault"].rows


def _attempts(result: ExperimentResult, runs: list[VariantResult]) -> Figure:
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    axes = fig.subplots(1, len(runs), squeeze=False, sharey=True)[0]
    for ax, v in zip(axes, runs, strict=True):
        longest: list[float] = []
        for row in _rows(v):
            measured = [float(t) for t in row.get("measured_s", [])]
            computed = [float(t) for t in row.get("computed_s", [])]
            longest = computed if len(computed) > len(longest) else longest
            label = f"{row.get('case')}: {row.get('state')} after {row.get('attempts')}"
            _by_attempt(ax, measured, "o", ms=7, alpha=0.8, label=label)
        if longest:
            _by_attempt(
                ax, longest, "k_", ms=22, mew=2, label="configured schedule", gid="schedule"
            )
        ax.set_xlabel("attempt")
        most = max([len(longest), *(len(r.get("measured_s", [])) for r in _rows(v))], default=1)
        ax.set_xticks(range(1, most + 1))
        ax.set_xlim(0.5, most + 0.5)
        ax.set_title(v.variant.name, fontsize=9, loc="left")
        legend(ax)
    axes[0].set_ylabel("s after the first attempt")
    fig.suptitle(
        "when the SMTP server saw each attempt (dots) against the schedule (bars)", fontsize=10
    )
    return fig


def _by_attempt(ax: Axes, times_s: list[float], fmt: str, **style: Any) -> None:
    """Attempt n (1-based) against its time in seconds."""
    ax.plot(range(1, len(times_s) + 1), times_s, fmt, **style)


def _throughput(result: ExperimentResult, runs: list[VariantResult]) -> Figure:
    return _bars(
        result, runs, ["measured_ms", "theory_ms"], "measured against theory", "ms to run every job"
    )


def _recovery(result: ExperimentResult, runs: list[VariantResult]) -> Figure:
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    ax = fig.subplots()
    v = runs[0]
    rows = _rows(v)
    jobs = [str(r.get("job", "?")).removeprefix("receipt-") for r in rows]
    after = [float(r.get("after_kill_s", r.get("rerun_after_s", 0.0))) for r in rows]
    ax.barh(range(len(rows)), after, color="tab:blue", label="ran again, s after the kill")
    ax.set_yticks(range(len(rows)), jobs, fontsize=7)
    params = {**result.experiment.params, **v.variant.params}
    lock_s = float(params.get("lock_ms", 0)) / 1000
    if lock_s:
        ax.axvline(lock_s, color="tab:red", ls="--", label=f"lock expires ({lock_s:g} s)")
    for e in result.experiment.expectations:
        if e.metric == "recovered_after_kill_s" and e.min is not None and e.max is not None:
            ax.axvspan(e.min, e.max, color="tab:green", alpha=0.1, label="expected window")
    ref = number(reference_values(result).get(v.variant.name, {}).get("recovered_after_kill_s"))
    if ref is not None:
        ax.axvline(ref, color="k", ls=":", label=f"seed {ref:g} s", gid="seed-reference")
    m = v.phases["fault"].metrics
    ax.set_title(
        f"{v.variant.name}: {m.get('receipts', 0):.0f} receipts for {m.get('charges', 0):.0f} "
        f"charges, {m.get('duplicates', 0):.0f} duplicates, {m.get('missing', 0):.0f} missing",
        fontsize=9,
        loc="left",
    )
    ax.set_xlabel("seconds after the worker holding the jobs was killed")
    legend(ax)
    return fig


def _columns(result: ExperimentResult, runs: list[VariantResult]) -> Figure:
    """The experiment's table columns as bars per variant, the seed's figures on them."""
    measured = [v.phases["fault"].metrics for v in runs]
    columns = [c for c in result.experiment.columns if any(c in m for m in measured)]
    return _bars(result, runs, columns, result.experiment.title)


def _bars(
    result: ExperimentResult,
    runs: list[VariantResult],
    metrics: list[str],
    title: str,
    ylabel: str = "",
) -> Figure:
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    ax = fig.subplots()
    names = [v.variant.name for v in runs]
    measured = {v.variant.name: v.phases["fault"].metrics for v in runs}
    bars_with_reference(ax, names, metrics, measured, reference_values(result))
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} (dashed: the seed's figures)", fontsize=9, loc="left")
    return fig


FIGURES: dict[str, tuple[str, Callable[[ExperimentResult, list[VariantResult]], Figure]]] = {
    "receipt-backoff": ("attempts.png", _attempts),
    "receipt-throughput": ("throughput.png", _throughput),
    "worker-crash": ("recovery.png", _recovery),
    "duplicate-enqueue": ("dedupe.png", _columns),
}
