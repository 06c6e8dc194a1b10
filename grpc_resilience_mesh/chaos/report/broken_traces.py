"""The report's section on trace rules: per rule judged, the traces checked and those that broke
it, each with what broke it and where it opens (`mesh traces ID`, or Jaeger's UI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult
from grpc_resilience_mesh.chaos.scenarios.declarations import CHECKED_METRIC
from grpc_resilience_mesh.client.traces import JAEGER_UI

LISTED = 10
"""Broken traces listed per rule: enough to open, few enough to read (the count says the rest)."""


def broken_json(phase: PhaseResult) -> dict[str, Any]:
    """result.json's copy: per rule, the traces checked and every one that broke it."""
    checked = int(phase.metrics.get(CHECKED_METRIC, 0))
    return {
        rule: {"checked": checked, "broken": [{"trace_id": t, "why": w} for t, w in broken]}
        for rule, broken in phase.broken_traces.items()
    }


def _opened(trace_id: str, jaeger: str | None) -> str:
    shown = f"`{trace_id}`"
    return f"[{shown}]({jaeger}/trace/{trace_id})" if jaeger else shown


def render_broken(result: ExperimentResult, environ: Mapping[str, str] | None = None) -> list[str]:
    """report.md's lines; none when no variant judged a trace rule."""
    jaeger = (JAEGER_UI.read(environ) or "").rstrip("/") or None
    lines: list[str] = []
    for v in result.variants:
        phase = v.phases.get("fault")
        if phase is None or not phase.broken_traces:
            continue
        checked = int(phase.metrics.get(CHECKED_METRIC, 0))
        for rule, broken in phase.broken_traces.items():
            lines.append(
                f"- {v.variant.name}, {rule}: {checked:,} traces, {len(broken):,} broke it"
                + (":" if broken else "")
            )
            lines += [f"  - {_opened(t, jaeger)}: {why}" for t, why in broken[:LISTED]]
            if len(broken) > LISTED:
                lines.append(f"  - and {len(broken) - LISTED:,} more (result.json lists all)")
    if not lines:
        return []
    return [
        "## Trace rules",
        "",
        "Every trace of the fault phase judged by the rule (`mesh traces TRACE_ID --dir "
        "<state dir>/traces` shows one as a waterfall).",
        "",
        *lines,
        "",
    ]
