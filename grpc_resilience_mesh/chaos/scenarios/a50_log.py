"""A50's ejections under `mesh up --xds`, read from the callers' logs.

grpcio 1.85 reports an outlier ejection nowhere but in gRPC core's `outlier_detection_lb` trace,
which the launcher turns on for the xDS callers (grpc_resilience_mesh.launch.xds_plane). A line of
it reads ``I1202 08:46:21.205861  26800 outlier_detection.cc:977] [outlier_detection_lb 0x7f19...]
ejecting candidate``: no cluster is named, so an instance is told by the addresses it was given
(``adding address entry for 127.0.0.1:41223``), matched against the dependency's endpoints in the
plane's file (xds/xds.json).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from grpc_resilience_mesh.services import topology
from grpc_resilience_mesh.services.telemetry.rotation import generations

_LINE = re.compile(
    r"^[IWE](?P<month>\d\d)(?P<day>\d\d) (?P<clock>\d\d:\d\d:\d\d\.\d{6})\s+\d+ "
    r"outlier_detection\.cc:\d+\] \[outlier_detection_lb (?P<lb>0x[0-9a-f]+)\] (?P<text>.*)$"
)
_ADDRESS = "adding address entry for "


def ejected_at(state_dir: Path, dependency: str) -> list[float]:
    """When a caller's A50 ejected one of `dependency`'s replicas, as this machine's
    monotonic seconds (what the load records), oldest first."""
    endpoints = _endpoints(state_dir / "xds" / "xds.json", dependency)
    callers = {e.caller for e in topology.EDGES if e.dependency == dependency}
    names = [r.name for c in sorted(callers) for r in topology.replicas(c)]
    logs = state_dir / "logs"
    found: list[float] = []
    for name in names:
        lines = (line for path in generations(logs / f"{name}.log") for line in _read_lines(path))
        found.extend(ejections(lines, endpoints))
    offset = time.time() - time.monotonic()
    return sorted(t - offset for t in found)


def ejections(lines: Iterable[str], endpoints: set[str]) -> list[float]:
    """The epoch seconds of each ejection logged by an outlier_detection_lb instance whose
    addresses are among `endpoints`. An instance's addresses are what it logged since it was
    created (a restarted process may reuse an instance's pointer)."""
    addresses: dict[str, set[str]] = {}
    found = []
    for line in lines:
        m = _LINE.match(line)
        if m is None:
            continue
        lb, text = m["lb"], m["text"].strip()
        if text == "created":
            addresses[lb] = set()
        elif text.startswith(_ADDRESS):
            addresses.setdefault(lb, set()).add(text[len(_ADDRESS) :])
        elif text == "ejecting candidate" and addresses.get(lb, set()) & endpoints:
            found.append(_epoch(m["month"], m["day"], m["clock"]))
    return found


def _epoch(month: str, day: str, clock: str) -> float:
    """The line's local time (it has no year: this year's, or last year's if that is later
    than now, as in the first hours of January)."""
    now = datetime.now()
    stamp = datetime.strptime(f"{now.year}{month}{day} {clock}", "%Y%m%d %H:%M:%S.%f")
    if stamp.timestamp() > now.timestamp() + 86400:
        stamp = stamp.replace(year=now.year - 1)
    return stamp.timestamp()


def _endpoints(config: Path, dependency: str) -> set[str]:
    """Every address the plane sends for `dependency`, whichever caller it is sent to."""
    try:
        nodes = json.loads(config.read_text())["nodes"]
    except (OSError, ValueError, KeyError):
        return set()
    return {a for deps in nodes.values() for a in deps.get(dependency, {}).get("endpoints", [])}


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return []
