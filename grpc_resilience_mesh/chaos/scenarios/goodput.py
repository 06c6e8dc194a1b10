"""Goodput over time, and how long it takes to come back after a trigger: pure functions of a
phase's outcomes and its fault timeline (no network, no clock).

Goodput is the calls a user got in full (OK and not degraded: a home page with its
personalised recommendations) per second, counted when they completed. Times are seconds on
the fault timeline's clock: since the fault schedule started (its `timeline_t0_s`, the
monotonic clock both load generators stamp requests with), or without one since the first
request started.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from grpc_resilience_mesh.chaos.results import FaultEvent
from grpc_resilience_mesh.loadgen.in_process import Outcome

BIN_S = 0.5
"""Width of a bin of the plotted series."""
WINDOW_S = 2.0
"""A level is judged over a sliding window this long: at the tens of calls per second a
declared capacity allows on 2 shared cores, a 1 s window holds too few calls (one late call
is 5%)."""
STEP_S = 0.1
"""How far apart the windows start."""
WARMUP_S = 1.0
"""The first second of the load is left out of the pre-trigger level (channels warming)."""


def good(outcome: Outcome) -> bool:
    """Served in full: OK with nothing degraded."""
    return outcome.code == "OK" and not outcome.degraded


@dataclass(frozen=True)
class Completions:
    """When each good call completed, and when the load's last request started."""

    times_s: tuple[float, ...]
    last_start_s: float
    first_start_s: float = 0.0

    @classmethod
    def of(cls, outcomes: Sequence[Outcome], t0_s: float | None = None) -> Completions:
        """`t0_s`: the timeline's start on the requests' clock (None: the first request)."""
        if not outcomes:
            return cls((), 0.0)
        first = min(o.started_s for o in outcomes)
        t0 = first if t0_s is None else t0_s
        done = sorted(o.started_s - t0 + o.latency_s for o in outcomes if good(o))
        return cls(tuple(done), max(o.started_s for o in outcomes) - t0, first - t0)

    def rate(self, start_s: float, stop_s: float) -> float:
        """Good completions per second in [start_s, stop_s)."""
        if stop_s <= start_s:
            return 0.0
        return sum(1 for t in self.times_s if start_s <= t < stop_s) / (stop_s - start_s)

    def series(self, bin_s: float = BIN_S) -> list[tuple[float, float]]:
        """(bin start, goodput per second) from the first request to the last, for the plot."""
        first = math.floor(self.first_start_s / bin_s)
        last = math.ceil(self.last_start_s / bin_s)
        return [(i * bin_s, self.rate(i * bin_s, (i + 1) * bin_s)) for i in range(first, last)]

    def windows_from(self, start_s: float) -> list[tuple[float, float]]:
        """(window start, goodput) for every whole WINDOW_S window from `start_s` on, STEP_S
        apart, up to the last request's start (later, fewer calls are still in flight)."""
        out = []
        n = 0
        while start_s + n * STEP_S + WINDOW_S <= self.last_start_s + 1e-9:
            at = start_s + n * STEP_S
            out.append((at, self.rate(at, at + WINDOW_S)))
            n += 1
        return out


def trigger_window(timeline: Sequence[FaultEvent]) -> tuple[float, float] | None:
    """When the first fault went on, and when it went off (None: it never did both)."""
    first = next((e for e in timeline if e.on), None)
    if first is None:
        return None
    off = next(
        (e for e in timeline if not e.on and e.what == first.what and e.at_s >= first.at_s), None
    )
    return None if off is None else (first.at_s, off.at_s)


def back_after(
    done: Completions, off_s: float, level: float, fraction: float = 0.95, relapse: float = 0.5
) -> float | None:
    """Seconds from `off_s` to the start of the first window whose goodput is at least
    `fraction` of `level` and after which no window falls below `relapse` of it (back, and
    not back into the bad state); None: it never came back within the load."""
    windows = done.windows_from(off_s)
    for i, (at, rate) in enumerate(windows):
        if rate >= fraction * level and all(r >= relapse * level for _, r in windows[i:]):
            return at - off_s
    return None


def low_for(done: Completions, off_s: float, threshold: float) -> float:
    """Seconds from `off_s` to the start of the first window whose goodput reaches
    `threshold`: how long goodput stayed below it (to the load's end if it never did)."""
    for at, rate in done.windows_from(off_s):
        if rate >= threshold:
            return at - off_s
    return max(0.0, done.last_start_s - off_s)
