"""The launcher's one poller: ask a readiness probe until it holds or the time is up."""

from __future__ import annotations

import time
from collections.abc import Callable

INTERVAL_S = 0.05


def poll_until(
    ready: Callable[[], bool],
    timeout_s: float,
    interval_s: float = INTERVAL_S,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Call `ready` until it returns True (then True) or `timeout_s` has passed (then False).
    `ready` is asked at least once; an exception it raises ends the wait."""
    deadline = clock() + timeout_s
    while True:
        if ready():
            return True
        if clock() > deadline:
            return False
        sleep(interval_s)
