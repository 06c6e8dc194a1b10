"""Run the longest test modules first, so that the suite's last minutes are not one long module
on one pytest-xdist worker while the other sits idle.

`make test` runs two workers with `--dist worksteal`: each takes half of the collection, in
order, and a worker that runs out steals from the end of the other's queue. With the
collection in pytest's order (alphabetical by folder), the minute-long end-to-end modules came
last and ran alone on one worker (docs/results/suite.md). Ordered longest first, they start at
once and the short tests fill in behind them: the longest-processing-time-first rule, at the
grain of a module so that module-scoped fixtures (a whole mesh) still start once.

The seconds come from tests/durations.json, written by a run with MESH_TEST_DURATIONS_OUT set
(`make test-durations`); a module it does not list counts as `UNLISTED_S`, or as
`UNLISTED_E2E_S` under tests/e2e, whose modules start processes and take seconds.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"
OUT_ENV = "MESH_TEST_DURATIONS_OUT"
UNLISTED_S = 0.5
UNLISTED_E2E_S = 10.0


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def recorded(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per module from the recorded file; none when it is missing or not a mapping."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    modules = doc.get("modules") if isinstance(doc, dict) else None
    if not isinstance(modules, dict):
        return {}
    return {str(k): float(v) for k, v in modules.items() if isinstance(v, int | float)}


def expected_s(module: str, seconds: dict[str, float]) -> float:
    if module in seconds:
        return seconds[module]
    return UNLISTED_E2E_S if module.startswith("tests/e2e/") else UNLISTED_S


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """The items with whole modules ordered by their seconds, longest first; a module's own
    items, and modules of equal seconds, keep their order."""
    return sorted(items, key=lambda item: -expected_s(module_of(item.nodeid), seconds))


class DurationRecorder:
    """Sums each module's setup, call and teardown seconds as reports arrive (in the xdist
    controller, from every worker) and writes them at the end."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller writes the whole run's figures
        ordered = dict(sorted(self.seconds.items(), key=lambda kv: -kv[1]))
        doc = {
            "how": "make test-durations: each module's setup + call + teardown seconds",
            "modules": {k: round(v, 2) for k, v in ordered.items()},
        }
        self.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def configure(config: pytest.Config) -> None:
    out = os.environ.get(OUT_ENV)
    if out and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(Path(out)), "mesh-durations")
