"""The fault phase's traces as the span files hold them, read once every span a check judges is
written: polled, never a fixed wait.

Each service writes its own file on its own timer (grpc_resilience_mesh.services.telemetry's
span writer: every 1 s, 0.5 s on the embedded mesh), so a trace shows up a piece at a time. A
trace is whole when nothing in it says a span is missing:

- one span only has no parent in the trace, and it is a server span (its root: the first
  service's, whose parent is the caller's); any other waits for its parent, from an upstream
  service's file or its own;
- every attempt answered (not failed) has the server span it reached under it;
- an attempt that failed may have none (an abort before the call left the caller); if its
  server span exists it ended with it, so it is written UNSEEN_AFTER_S after the attempt ended.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from pathlib import Path

from grpc_resilience_mesh.client.traces import Span, group_traces, spans_of, trace_files

POLL_S = 0.1
TRACE_WAIT_S = 10.0
"""How long the span files may take to hold a span of every trace of the phase."""
UNSEEN_AFTER_S = 1.1
"""A span that ended this long ago is in its file if it exists at all: longer than a span
writer waits between writes (grpc_resilience_mesh.services.telemetry.tracing's
DEFAULT_DELAY_S, 1 s; 0.5 s on the embedded mesh, where it also covers a late wake). Not
imported: it would load the SDK."""
CLOSE_WAIT_S = 2.2
"""Once every trace has a span, how long the rest may take: twice UNSEEN_AFTER_S, for a
writer that wakes late on a loaded machine. Past it the check judges what is written (a
service that writes no spans leaves its callers' traces open for good)."""


def read_local(path: Path, trace_ids: set[str]) -> dict[str, list[Span]]:
    """trace id -> every span of it the span files hold."""
    spans: list[Span] = []
    for file in trace_files(path):
        with suppress(OSError), file.open("rb") as lines:
            spans.extend(spans_of(lines, trace_ids))
    return group_traces(spans)


def _read(path: Path, trace_ids: set[str]) -> dict[str, list[Span]] | None:
    """read_local, or None when there is no such folder (no span files: nothing to wait for)."""
    return read_local(path, trace_ids) if path.is_dir() else None


def _failed(span: Span) -> bool:
    return str((span.get("status") or {}).get("code", "")) == "ERROR"


def missing(spans: list[Span], now_ns: int) -> str | None:
    """What of this trace may not be written yet at `now_ns` (wall clock); None: it is whole."""
    ids = {s.get("span_id") for s in spans}
    orphans = [s for s in spans if s.get("parent_span_id") not in ids]
    if len(orphans) > 1 or (orphans and not str(orphans[0].get("name", "")).startswith("Recv.")):
        return f"the parent of {orphans[-1].get('name', '?')}"
    parents = {s.get("parent_span_id") for s in spans}
    unseen_ns = round(UNSEEN_AFTER_S * 1e9)
    for s in spans:
        if not str(s.get("name", "")).startswith("Attempt.") or s.get("span_id") in parents:
            continue
        if not _failed(s) or now_ns < int(s.get("end_ns") or 0) + unseen_ns:
            return f"the server span under {s.get('name', '?')}"
    return None


def whole(traces: dict[str, list[Span]], trace_ids: set[str], now_ns: int) -> bool:
    """Every trace of `trace_ids` is in `traces`, and none misses a span."""
    return len(traces) >= len(trace_ids) and all(
        missing(spans, now_ns) is None for spans in traces.values()
    )


async def phase_traces(path: Path, trace_ids: set[str]) -> dict[str, list[Span]]:
    """The traces of `trace_ids` in the span files under `path`, read every POLL_S until they
    are whole; at most TRACE_WAIT_S for a span of each, then CLOSE_WAIT_S for the rest."""
    traces: dict[str, list[Span]] = {}
    deadline = time.monotonic() + TRACE_WAIT_S
    while (read := await asyncio.to_thread(_read, path, trace_ids)) is not None:
        traces = read
        if whole(traces, trace_ids, time.time_ns()):
            break
        now = time.monotonic()
        if len(traces) >= len(trace_ids):
            deadline = min(deadline, now + CLOSE_WAIT_S)
        if now > deadline:
            break
        await asyncio.sleep(POLL_S)
    return traces
