"""The trace rules: what breaks each, judged on one trace's spans as the services write them.

A request's trace holds, per service it reached, a `Recv.<svc>.<M>` span; under it a
`Sent.<svc>.<M>` span per logical outbound call, which carries the call's strategy events
(`breaker opened`, `breaker rejected call`, `retry scheduled`), and under that an
`Attempt.<svc>.<M>` span per attempt. A fallback is a `fallback served` event on the server
span that stood in (grpc_resilience_mesh/services/telemetry/tracing/span_events.py).

    max_attempts_per_request: N  no logical call made more than N attempts (retry's
                                 max_attempts, per hop: attempts multiply across hops unseen
                                 in any one service's counters)
    breaker_open_then_fallback   every breaker event that refused or failed a call (`breaker
                                 opened`, `breaker rejected call`) is followed, in the same
                                 trace, by a `fallback served` that served something (not
                                 `omitted`): an open breaker gives a useful answer, not an error
    no_attempt_after_deadline    no attempt, on any hop, started after the request's own
                                 deadline (its first server span's start plus the deadline the
                                 load sent: later than the client's by the time to reach the
                                 gateway, so a late attempt is never imagined)
"""

from __future__ import annotations

from collections import Counter

from grpc_resilience_mesh.client.traces import Span, root_of
from grpc_resilience_mesh.services.telemetry.names import (
    EV_BREAKER,
    EV_BREAKER_REJECTED,
    EV_FALLBACK,
    SERVED_BY,
)

BREAKER_EVENTS = frozenset({EV_BREAKER[2], EV_BREAKER_REJECTED})
"""A breaker that opened on this call's failure, or refused the call while open or half-open."""


def _attempts(spans: list[Span]) -> list[Span]:
    return [s for s in spans if str(s.get("name", "")).startswith("Attempt.")]


def most_attempts(spans: list[Span], limit: int) -> str | None:
    """The logical call with the most attempts, when it made more than `limit`."""
    per_call = Counter(s.get("parent_span_id") for s in _attempts(spans))
    if not per_call:
        return None
    call, count = per_call.most_common(1)[0]
    if count <= limit:
        return None
    names = {s["span_id"]: s.get("name", "?") for s in spans}
    return f"{names.get(call, 'a call')} made {count} attempts (at most {limit})"


def _answered(event: Span) -> bool:
    """A fallback that served something: the gateway reports one that had nothing to serve
    (`omitted`) as a fallback too."""
    served_by = (event.get("attributes") or {}).get(SERVED_BY)
    return bool(event["name"] == EV_FALLBACK and served_by != "omitted")


def breaker_without_fallback(spans: list[Span]) -> str | None:
    """The first breaker event no fallback that served something followed in the trace."""
    found = [e for s in spans for e in s.get("events") or ()]
    events = [(e["time_ns"], e["name"]) for e in found]
    fallbacks = [e["time_ns"] for e in found if _answered(e)]
    for t, name in sorted(events):
        if name in BREAKER_EVENTS and not any(f >= t for f in fallbacks):
            return f"{name!r} with no fallback served after it"
    return None


def attempt_after_deadline(spans: list[Span], deadline_s: float) -> str | None:
    """The first attempt that started after the request's deadline."""
    deadline_ns = root_of(spans)["start_ns"] + round(deadline_s * 1e9)
    late = sorted(
        (s for s in _attempts(spans) if s["start_ns"] > deadline_ns), key=lambda s: s["start_ns"]
    )
    if not late:
        return None
    over_ms = (late[0]["start_ns"] - deadline_ns) / 1e6
    return f"{late[0].get('name', '?')} started {over_ms:.1f} ms after the deadline"


def judge(rule: str, limit: int | None, deadline_s: float, spans: list[Span]) -> str | None:
    """One rule on one trace: None when it holds, else what broke it (`rule` is one of
    trace_rule_names.RULES, checked when the file loaded)."""
    if rule == "max_attempts_per_request":
        return most_attempts(spans, limit or 1)
    if rule == "breaker_open_then_fallback":
        return breaker_without_fallback(spans)
    if rule == "no_attempt_after_deadline":
        return attempt_after_deadline(spans, deadline_s)
    raise ValueError(f"unknown trace rule {rule!r}")
