"""The guard: the experiment's own outcomes judged over a sliding window while faults are on.

Platforms halt a run on a health check outside the experiment (Chaos Mesh StatusCheck, FIS stop
conditions); this one reads the load's own calls, so it sees what the experiment's caller sees,
at the resolution of its check (every 250 ms by default), and names the figure that tripped it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from grpc_resilience_mesh.loadgen.percentile import percentile

MAX_CHECK_EVERY_S = 0.25
"""The guard judges at least this often: a breach is acted on within a quarter second."""


class Record(Protocol):
    """What the guard reads of a call (grpc_resilience_mesh.loadgen.any_method's CallRecord)."""

    @property
    def started_s(self) -> float: ...

    @property
    def latency_s(self) -> float: ...

    @property
    def code(self) -> str: ...


@dataclass(frozen=True)
class GuardSpec:
    """The bounds a run must stay within; None switches a bound off."""

    window_s: float = 1.0
    """The sliding window, in seconds of call completions, each check judges; when fewer than
    `min_requests` calls ended in it, the last `min_requests` calls, however old."""
    check_every_s: float = MAX_CHECK_EVERY_S
    """How often the window is judged (at most MAX_CHECK_EVERY_S)."""
    min_requests: int = 10
    """Calls the window must hold before it is judged: two failures out of three say little."""
    max_error_rate: float | None = 0.5
    """Share of the window's calls not OK."""
    max_p99_s: float | None = None
    """Nearest-rank p99 of the window's latencies, failed calls included."""
    min_goodput_per_s: float | None = None
    """OK calls per second over the window (over the time since the guard began, if shorter)."""

    def __post_init__(self) -> None:
        if self.window_s <= 0:
            raise ValueError(f"guard window_s {self.window_s}: expected > 0")
        if not 0 < self.check_every_s <= MAX_CHECK_EVERY_S:
            raise ValueError(
                f"guard check_every_s {self.check_every_s}: expected 0 < s <= {MAX_CHECK_EVERY_S}"
            )
        if self.min_requests < 1:
            raise ValueError(f"guard min_requests {self.min_requests}: expected >= 1")


@dataclass(frozen=True)
class Breach:
    """The figure that tripped the guard, its bound, and when (the guard's clock)."""

    metric: str
    value: float
    bound: float
    at_s: float

    def __str__(self) -> str:
        sign = "<" if self.metric == "goodput_per_s" else ">"
        return f"{self.metric} {self.value:.3g} {sign} {self.bound:g}"


class Guard:
    """Fed every outcome (`watch`), judges the last `window_s` of them (`check`)."""

    def __init__(self, spec: GuardSpec, clock: Callable[[], float] = time.monotonic) -> None:
        self.spec = spec
        self._clock = clock
        self._began_s = clock()
        self._window: deque[tuple[float, bool, float]] = deque()

    def watch(self, record: Record) -> None:
        ended = record.started_s + record.latency_s
        self._window.append((ended, record.code == "OK", record.latency_s))

    def check(self) -> Breach | None:
        """The first bound the window breaks now (error rate, p99, goodput), or None."""
        now = self._clock()
        spec = self.spec
        # A slow failure (a blackholed link: each call ends at its deadline) may end fewer
        # than min_requests calls per window, and a window that never fills would never be
        # judged: the last min_requests calls stay, however old, until newer ones replace them.
        since = now - spec.window_s
        while len(self._window) > spec.min_requests and self._window[0][0] < since:
            self._window.popleft()
        calls = len(self._window)
        if calls < spec.min_requests:
            return None
        ok = sum(1 for _, good, _ in self._window if good)
        error_rate = (calls - ok) / calls
        if spec.max_error_rate is not None and error_rate > spec.max_error_rate:
            return Breach("error_rate", error_rate, spec.max_error_rate, now)
        if spec.max_p99_s is not None:
            p99 = percentile((latency for _, _, latency in self._window), 99)
            if p99 > spec.max_p99_s:
                return Breach("p99_s", p99, spec.max_p99_s, now)
        span = min(spec.window_s, now - self._began_s)
        if spec.min_goodput_per_s is not None and span > 0:
            goodput = sum(1 for end, good, _ in self._window if good and end >= since) / span
            if goodput < spec.min_goodput_per_s:
                return Breach("goodput_per_s", goodput, spec.min_goodput_per_s, now)
        return None

    async def run(self, on_breach: Callable[[Breach], None], stop: asyncio.Event) -> None:
        """Checks every `check_every_s` until `stop`; on a breach calls `on_breach` once and
        returns."""
        while not stop.is_set():
            breach = self.check()
            if breach is not None:
                on_breach(breach)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.spec.check_every_s)
