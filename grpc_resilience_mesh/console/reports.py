"""Experiment reports for the console: each report's requests as points (when, how long,
how it ended, its trace id), so a slow or failed point opens its trace."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MAX_POINTS = 5000
"""Points per variant and phase sent to the page (the slowest and failed ones kept first)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _written(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def list_reports(root: Path) -> list[dict[str, Any]]:
    """Newest first (by when result.json was written), so the tab opens on the experiment
    just run, not the alphabetically first."""
    found = []
    paths = sorted(root.glob("*/result.json"), key=lambda p: (-_written(p), p.parent.name))
    for path in paths:
        data = _load(path)
        if data is not None:
            found.append(
                {
                    "name": path.parent.name,
                    "title": data.get("title", ""),
                    "held": data.get("held"),
                    "written_at": _written(path),
                }
            )
    return found


def report_points(root: Path, name: str) -> dict[str, Any]:
    """Every variant's and phase's requests as [at_s, latency_ms, code, degraded, trace_id]."""
    if not _NAME.match(name):
        raise ValueError("a report's name is its folder's name")
    data = _load(root / name / "result.json")
    if data is None:
        raise LookupError(name)
    panels = []
    for variant in data.get("variants") or ():
        for phase, body in (variant.get("phases") or {}).items():
            samples = [s for s in body.get("samples") or () if isinstance(s, dict)]
            if len(samples) > MAX_POINTS:
                samples.sort(key=lambda s: (s.get("code") == "OK", -float(s["latency_ms"])))
                samples = samples[:MAX_POINTS]
            panels.append(
                {
                    "variant": variant.get("name", ""),
                    "phase": phase,
                    "points": [
                        [
                            float(s.get("at_s", 0.0)),
                            float(s.get("latency_ms", 0.0)),
                            str(s.get("code", "")),
                            bool(s.get("degraded")),
                            str(s.get("trace_id") or ""),
                        ]
                        for s in samples
                    ],
                }
            )
    return {"name": name, "title": data.get("title", ""), "panels": panels}
