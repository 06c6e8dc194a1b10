"""Calls-to-provider of one `mesh chaos run --json` report against another's: what the compose
and the k8s real-node rehearsals compare with the embedded mesh's run of the same experiment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]


def outputs(tmp_path: Path, name: str) -> list[str]:
    """Where a `mesh chaos run` writes: its JSON (tmp_path/NAME.json), reports and state."""
    return [
        f"--json={tmp_path / name}.json",
        f"--reports={tmp_path / name}-reports",
        f"--state-dir={tmp_path / name}-var",
    ]


def against_embedded(
    report: Path, tmp_path: Path
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """provider-outage run on the embedded mesh too, then both runs' calls-to-provider (every
    variant but those that ask for xDS, which only the embedded mesh can run) and where they
    differ (calls_differ)."""
    from grpc_resilience_mesh.services import safe_yaml

    embedded = tmp_path / "embedded.json"
    alone = subprocess.run(
        [*MESH, "chaos", "run", "provider-outage", *outputs(tmp_path, "embedded")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert embedded.exists(), alone.stdout[-3000:] + alone.stderr[-3000:]
    ours, theirs = dependency_calls(report), dependency_calls(embedded)
    spec = safe_yaml.load_file(
        str(ROOT / "grpc_resilience_mesh" / "chaos" / "experiments" / "provider-outage.yaml")
    )
    xds = all_measured_but_xds(spec, ((report, ours), (embedded, theirs)))
    ours = {k: v for k, v in ours.items() if k not in xds}
    return ours, theirs, calls_differ(spec, ours, theirs)


def dependency_calls(report: Path) -> dict[str, float]:
    """Each measured variant's calls to the experiment's dependency in the fault phase."""
    (experiment,) = json.loads(report.read_text())
    return {
        v["name"]: v["phases"]["fault"]["metrics"]["dependency_calls"]
        for v in experiment["variants"]
        if not v["skipped"] and not v["error"] and "fault" in v["phases"]
    }


def all_measured_but_xds(spec: dict[str, Any], runs: Any) -> set[str]:
    """Checks each run measured every variant but those asking for xDS, which say why not;
    returns those."""
    xds = {v["name"] for v in spec["variants"] if v.get("xds")}
    every = {v["name"] for v in spec["variants"]} - xds
    for report, measured in runs:
        variants = json.loads(report.read_text())[0]["variants"]
        not_measured = {v["name"]: v["skipped"] or v["error"] for v in variants}
        assert set(measured) - xds == every, f"{report.name}: {not_measured}"
        for name in xds - set(measured):
            assert "embedded mesh" in not_measured[name] or "make peers" in not_measured[name]
    return xds


def calls_differ(
    spec: dict[str, Any], ours: dict[str, float], embedded: dict[str, float]
) -> list[str]:
    """Where our run's counts and the embedded run's disagree: a count with no timing in it
    (an exact bound, or none) must be the same number; one that depends on timing must be
    inside the experiment's bounds in both runs."""
    bounds: dict[str, list[dict[str, Any]]] = {}
    for e in spec["expectations"]:
        if e.get("metric") == "dependency_calls" and e.get("phase", "fault") == "fault":
            bounds.setdefault(e["variant"], []).append(e)
    differ = []
    for variant, calls in ours.items():
        theirs = embedded[variant]
        exact = [e for e in bounds.get(variant, []) if e.get("min") == e.get("max") is not None]
        if exact or variant not in bounds:  # no timing in the count: the same number
            if calls != theirs:
                differ.append(f"{variant}: {calls} through the stack, {theirs} embedded")
        for e in bounds.get(variant, []):  # a count that depends on timing: the same bounds
            for n in (calls, theirs):
                if not e.get("min", n) <= n <= e.get("max", n):
                    differ.append(f"{variant}: {n} outside {e.get('min')}..{e.get('max')}")
    return differ
