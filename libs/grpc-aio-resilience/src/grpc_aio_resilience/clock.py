"""Injected time: a monotonic `now()` and an async `sleep()` (tests: tests/support/fake_clock)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic seconds and a sleep that strategies use instead of `time`/`asyncio`."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: `time.monotonic` and `asyncio.sleep`.

    `now` is `time.monotonic` itself, not a method around it: a call reads the clock about
    seven times between both ends, and each read would otherwise run a Python frame."""

    now = staticmethod(time.monotonic)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))
