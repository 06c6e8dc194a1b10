"""What `mesh chaos compare` reads: result.json files of `mesh chaos run --repeat N`, from a file,
a run's folder, or a folder of earlier runs (the last N that held), pooled into one side.

A side holds, per expectation (variant, phase, metric, bound), every run's measured value (the
file's `repeat` spread, or its verdict where the run was not repeated), and, per variant and
phase, the per-request latencies over the run's steady-state median (result.json keeps the last
run's samples).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ExpectationKey = tuple[str, str, str, str]
"""(variant, phase, metric, bound)."""
PhaseKey = tuple[str, str]
"""(variant, phase)."""


class CompareInputError(ValueError):
    """Input the comparison cannot use: the message names the file and what is wrong."""


@dataclass
class Side:
    """One side of the comparison: its experiment, its files and their runs, pooled."""

    experiment: str
    files: list[Path] = field(default_factory=list)
    runs: int = 0
    values: dict[ExpectationKey, list[float]] = field(default_factory=dict)
    why: dict[ExpectationKey, str] = field(default_factory=dict)
    latencies: dict[PhaseKey, list[float]] = field(default_factory=dict)
    """Per-request latency / the run's steady-state p50 (steady_p50), OK requests."""
    drift: dict[str, float] = field(default_factory=dict)
    """Per variant, the most any of its runs' two steady-state p50s (before and after the
    faults, the same healthy load) differed, as a factor: how far the machine alone moved a
    latency within one run (machine_drift)."""


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise CompareInputError(f"{path}: cannot be read ({err})") from None
    except json.JSONDecodeError as err:
        raise CompareInputError(f"{path}: not JSON ({err.msg}, line {err.lineno})") from None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]  # `mesh chaos run --json` of one experiment
    if not isinstance(data, dict) or "name" not in data or "verdicts" not in data:
        raise CompareInputError(
            f"{path}: not a result.json of one experiment (`mesh chaos run NAME --repeat N` "
            "writes REPORTS/NAME/result.json)"
        )
    return data


def _key(entry: dict[str, Any]) -> ExpectationKey:
    return (str(entry["variant"]), str(entry["phase"]), str(entry["metric"]), str(entry["bound"]))


def _add_run_values(side: Side, data: dict[str, Any]) -> None:
    spreads = data.get("repeat") or []
    why = {_key(v): str(v.get("why", "")) for v in data["verdicts"]}
    if spreads:
        side.runs += max(int(s.get("runs", 0)) for s in spreads)
        rows = [(_key(s), s["values"]) for s in spreads]
    else:
        side.runs += 1
        rows = [(_key(v), [v.get("measured")]) for v in data["verdicts"]]
    for key, values in rows:
        side.values.setdefault(key, []).extend(float(x) for x in values if x is not None)
        side.why.setdefault(key, why.get(key, ""))


def steady_p50(variant: dict[str, Any], phase: str) -> float | None:
    """The healthy median the run measured nearest to `phase`: the steady-state check before
    the faults for the first phase, the one after them for the later ones (the recovery)."""
    first = next(iter(variant.get("phases", {})), None)
    checks = ("steady_before", "steady_after") if phase == first else ("steady_after",)
    for check in (*checks, "steady_before"):
        value = (variant.get(check) or {}).get("p50_ms")
        if value:
            return float(value)
    return None


def machine_drift(variant: dict[str, Any]) -> float:
    """max / min of the run's steady-state p50 before and after the faults (1 if unknown)."""
    found = [(variant.get(c) or {}).get("p50_ms") for c in ("steady_before", "steady_after")]
    values = [float(v) for v in found if v]
    return max(values) / min(values) if len(values) == 2 else 1.0


def _add_samples(side: Side, data: dict[str, Any]) -> None:
    """Each OK request's latency over its run's steady-state p50 (steady_p50): the load a
    machine carries moves every latency of a run together, the ratio cancels it."""
    pooled: dict[PhaseKey, list[float]] = defaultdict(list)
    for variant in data.get("variants", []):
        for phase, body in variant.get("phases", {}).items():
            drift = machine_drift(variant)
            side.drift[variant["name"]] = max(side.drift.get(variant["name"], 1.0), drift)
            scale = steady_p50(variant, phase)
            if scale is None:
                continue  # no healthy median to measure against: the phase is not compared
            ok = [s for s in body.get("samples", []) if s.get("code") == "OK"]
            pooled[(variant["name"], phase)] += [float(s["latency_ms"]) / scale for s in ok]
    for key, values in pooled.items():
        side.latencies.setdefault(key, []).extend(values)


def result_files(source: Path, experiment: str | None, last: int) -> list[Path]:
    """The result.json files `source` stands for: itself, its folder's, or (a folder of earlier
    runs) the last `last` by time that held, of `experiment` where it is known."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise CompareInputError(f"{source}: no such file or folder")
    if (source / "result.json").is_file():
        return [source / "result.json"]
    held = []
    for path in sorted(source.rglob("result.json"), key=lambda p: (p.stat().st_mtime, str(p))):
        data = _read(path)
        if data.get("held") and (experiment is None or data["name"] == experiment):
            held.append(path)
    if not held:
        wanted = f" of {experiment}" if experiment else ""
        raise CompareInputError(f"{source}: holds no result.json{wanted} that held")
    return held[-last:]


def load_side(files: list[Path]) -> Side:
    """The files pooled; CompareInputError when they are of different experiments."""
    side: Side | None = None
    for path in files:
        data = _read(path)
        if side is None:
            side = Side(str(data["name"]))
        elif data["name"] != side.experiment:
            raise CompareInputError(
                f"{path}: an experiment {data['name']!r}, not {side.experiment!r}"
            )
        side.files.append(path)
        _add_run_values(side, data)
        _add_samples(side, data)
    if side is None:
        raise CompareInputError("no result.json to read")
    return side
