"""When breakers moved during a load, read back from the spans the services wrote.

A breaker moves inside some request's call, and the tracing listener puts `breaker opened`,
`breaker half-opened` or `breaker closed` on that call's span. Every request of a load carries
a trace id of its own, so an event's trace says which request it happened in, and the event's
time against that trace's first span places it on the load's clock:

    x = (request start - load start) + (event time - first span's start)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.client.traces import Span, trace_files
from grpc_resilience_mesh.loadgen.in_process import Outcome

MOVES = {"breaker opened": "opened", "breaker half-opened": "half-open", "breaker closed": "closed"}
_PREFIX = '{"trace_id":"'


@dataclass(frozen=True)
class BreakerMove:
    """One breaker transition, in seconds since the load started."""

    at_s: float
    to: str
    """opened, half-open or closed."""
    scope: str
    """The breaker's method (short name), or * for a per-dependency breaker."""


def breaker_moves(
    traces_dir: Path, loads: dict[str, list[Outcome]]
) -> dict[str, list[BreakerMove]]:
    """Per load (e.g. per variant): the breaker moves that happened in its requests."""
    where: dict[str, tuple[str, float]] = {}
    for name, outcomes in loads.items():
        if outcomes:
            t0 = min(o.started_s for o in outcomes)
            for o in outcomes:
                if o.trace_id:
                    where[o.trace_id] = (name, o.started_s - t0)
    first_ns: dict[str, int] = {}
    events: list[tuple[str, int, str, str]] = []
    for span in _spans_of(traces_dir, where):
        tid = span["trace_id"]
        first_ns[tid] = min(first_ns.get(tid, span["start_ns"]), span["start_ns"])
        for event in span.get("events", ()):
            to = MOVES.get(event.get("name", ""))
            if to is not None:
                scope = str(event.get("attributes", {}).get("mesh.breaker_scope", "*"))
                events.append((tid, int(event["time_ns"]), to, scope.rsplit("/", 1)[-1]))
    moves: dict[str, list[BreakerMove]] = {name: [] for name in loads}
    for tid, time_ns, to, scope in events:
        name, started_s = where[tid]
        moves[name].append(BreakerMove(started_s + (time_ns - first_ns[tid]) / 1e9, to, scope))
    for found in moves.values():
        found.sort(key=lambda m: m.at_s)
    return moves


def _spans_of(traces_dir: Path, wanted: dict[str, tuple[str, float]]) -> Iterable[Span]:
    """Spans of the wanted traces; other lines are skipped before parsing (files are large)."""
    for path in trace_files(traces_dir):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if not line.startswith(_PREFIX) or line[13:45] not in wanted:
                    continue
                try:
                    span = json.loads(line)
                except ValueError:
                    continue  # a torn last line: a service still writing
                if isinstance(span, dict) and isinstance(span.get("start_ns"), int):
                    yield span
