"""Predicted beside measured: the model's outcome and recovery time for each panel of the
four-panel, over seeds, beside a `mesh chaos run metastable-four-panel --json` result."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.chaos.metastable.model import simulate
from grpc_resilience_mesh.chaos.metastable.outcome import (
    RECOVERED_WITHIN_S,
    model_metrics,
    recovered,
)
from grpc_resilience_mesh.chaos.metastable.panels import Panel

METRIC = "back_after_trigger_s"


@dataclass(frozen=True)
class Prediction:
    """A panel's modelled runs: how many recovered, and the median recovery time."""

    panel: Panel
    recovered_runs: int
    runs: int
    back_after_s: float

    @property
    def outcome(self) -> str:
        return "recovered" if 2 * self.recovered_runs > self.runs else "tipped"


def predict(panel: Panel, seeds: int) -> Prediction:
    metrics = [model_metrics(panel.system, simulate(panel.system, s)) for s in range(seeds)]
    return Prediction(
        panel,
        sum(recovered(m) for m in metrics),
        seeds,
        statistics.median(m[METRIC] for m in metrics),
    )


def measured_runs(result: dict[str, Any], variant: str) -> list[float]:
    """Each run's back_after_trigger_s for `variant`: from the repeat spread when the run was
    repeated and an expectation reads it, else the (last) run's metrics."""
    for spread in result.get("repeat", []):
        if spread["variant"] == variant and spread["metric"] == METRIC:
            return [float(v) for v in spread["values"] if v is not None]
    for v in result.get("variants", []):
        if v["name"] == variant and "fault" in v["phases"]:
            value = v["phases"]["fault"]["metrics"].get(METRIC)
            return [] if value is None else [float(value)]
    return []


def load_result(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if isinstance(data, list):
        data = data[0]
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a result")
    return data


def table(predictions: list[Prediction], result: dict[str, Any] | None) -> str:
    """A markdown table: published, predicted and measured outcome and recovery time."""
    head = "| panel | published | predicted | predicted back after (s) |"
    rule = "|---|---|---|---|"
    if result is not None:
        head += " measured | measured back after (s) | error (s) |"
        rule += "---|---|---|"
    lines = [head, rule]
    for p in predictions:
        row = (
            f"| {p.panel.name} | {p.panel.published or '-'} | {p.outcome} "
            f"({p.recovered_runs}/{p.runs} recovered) | {p.back_after_s:.1f} |"
        )
        if result is not None:
            runs = measured_runs(result, p.panel.name)
            outcome = "/".join("recovered" if r <= RECOVERED_WITHIN_S else "tipped" for r in runs)
            shown = ", ".join(f"{r:.1f}" for r in runs)
            error = statistics.median(abs(r - p.back_after_s) for r in runs) if runs else 0.0
            row += f" {outcome or '-'} | {shown or '-'} | {error:.1f} |"
        lines.append(row)
    return "\n".join(lines)
