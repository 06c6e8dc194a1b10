"""The console's reports tab opens on the experiment run last, not the alphabetically first."""

from __future__ import annotations

import json
import os
from pathlib import Path

from grpc_resilience_mesh.console.reports import list_reports


def write(root: Path, name: str, at: float) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    path = folder / "result.json"
    path.write_text(json.dumps({"title": name, "held": True, "variants": []}))
    os.utime(path, (at, at))


def test_reports_are_listed_newest_first(tmp_path: Path) -> None:
    write(tmp_path, "bulkhead-isolation", 1_000_000.0)
    write(tmp_path, "provider-outage", 3_000_000.0)
    write(tmp_path, "deadline-propagation", 2_000_000.0)
    names = [r["name"] for r in list_reports(tmp_path)]
    assert names == ["provider-outage", "deadline-propagation", "bulkhead-isolation"]
