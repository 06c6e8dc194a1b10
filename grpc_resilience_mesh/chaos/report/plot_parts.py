"""Pieces the figures share: a legend, bars with the seed's figure beside them, numbers."""

from __future__ import annotations

import re
from typing import Any

from matplotlib.axes import Axes

from grpc_resilience_mesh.chaos.results import ExperimentResult


def legend(ax: Axes, outside: bool = False) -> None:
    """Only axes with labelled artists get a legend (else matplotlib warns); `outside`: to the
    right of the axes, off the data."""
    if not ax.get_legend_handles_labels()[0]:
        return
    if outside:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=7, loc="best")


def number(value: object) -> float | None:
    """A reference value as a number: 14, 2.5, or the leading figure of "2.136 (killed...)"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    match = re.match(r"^\s*(\d+(?:\.\d+)?)(?:\s|$)", str(value))
    return float(match.group(1)) if match else None


def reference_values(result: ExperimentResult, phase: str = "fault") -> dict[str, dict[str, Any]]:
    return {r.variant: r.values for r in result.experiment.reference if r.phase == phase}


def bars_with_reference(
    ax: Axes,
    groups: list[str],
    metrics: list[str],
    measured: dict[str, dict[str, float]],
    refs: dict[str, dict[str, Any]],
) -> None:
    """Grouped bars (a group per variant, a bar per metric), the value on each bar, and the
    seed's figure as a black dashed line across every bar it has one for."""
    width = 0.8 / len(metrics)
    seed_labelled = False
    for i, metric in enumerate(metrics):
        xs = [g + (i - (len(metrics) - 1) / 2) * width for g in range(len(groups))]
        heights = [measured[name].get(metric, 0.0) for name in groups]
        bars = ax.bar(xs, heights, width * 0.9, label=metric.replace("_", " "))
        ax.bar_label(bars, fmt="%.0f", fontsize=7, label_type="center")
        for x, name in zip(xs, groups, strict=True):
            ref = number(refs.get(name, {}).get(metric))
            if ref is None:
                continue
            label = None if seed_labelled else "seed (source documents)"
            seed_labelled = True
            ax.plot(
                [x - width / 2, x + width / 2],
                [ref, ref],
                "k--",
                lw=2,
                label=label,
                gid="seed-reference",
            )
            ax.annotate(
                f"seed {ref:g}",
                (x + width / 2, ref),
                xytext=(0, 3),
                textcoords="offset points",
                ha="right",
                fontsize=7,
            )
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    legend(ax)
