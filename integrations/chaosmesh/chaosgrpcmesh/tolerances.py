"""Tolerances (`"type": "probe"`): bounds on a probe's metrics, the mesh's expectations."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from grpc_resilience_mesh.chaos.experiment.metric_names import counted

log = logging.getLogger("chaostoolkit")


def _missed(metrics: Mapping[str, float], metric: str, low: Any, high: Any) -> str | None:
    value = metrics.get(metric)
    if value is None and counted(metric):
        value = 0.0  # a status never returned, a method never called: none, not n/a
    if value is None:
        return f"{metric}: not measured"
    if (low is not None and value < low) or (high is not None and value > high):
        want = " and ".join(
            s for s in (f">= {low}" * (low is not None), f"<= {high}" * (high is not None)) if s
        )
        return f"{metric}={value:.4g} (want {want})"
    return None


def within(
    value: Mapping[str, float] | None = None,
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
) -> bool:
    """Every metric of `bounds` ({metric: {min, max}}) measured and inside its bounds (`value`
    is the probe's output, which Chaos Toolkit passes in)."""
    value = value or {}
    missed = [
        m for k, b in (bounds or {}).items() if (m := _missed(value, k, b.get("min"), b.get("max")))
    ]
    for line in missed:
        log.warning("steady state missed: %s", line)
    return not missed


def expectations_met(
    value: Mapping[str, Any] | None = None, expectations: Sequence[Mapping[str, Any]] | None = None
) -> bool:
    """chaosgrpcmesh.probes.measured's output against the experiment's expectations ([{phase,
    metric, min, max}]): all met, as `mesh chaos run` judges them. Before the method began
    nothing was measured and nothing is due: True."""
    value = value or {}
    if not value.get("started"):
        return True
    phases = value.get("phases", {})
    missed = []
    for e in expectations or []:
        phase = e.get("phase", "fault")
        if phase not in phases:
            missed.append(f"{phase}/{e['metric']}: the phase was not measured")
        elif m := _missed(phases[phase], e["metric"], e.get("min"), e.get("max")):
            missed.append(f"{phase}/{m}")
    for line in missed:
        log.warning("expectation missed: %s", line)
    return not missed
