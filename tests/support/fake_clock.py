"""A clock for tests: it advances only when slept on or told to (grpc_aio_resilience's
Clock)."""

from __future__ import annotations

import asyncio


class FakeClock:
    """A clock that advances only when slept on or told to; unit tests never really wait."""

    def __init__(self, start_s: float = 1000.0) -> None:
        self._now_s = start_s
        self.sleeps_s: list[float] = []

    def now(self) -> float:
        return self._now_s

    def advance(self, seconds: float) -> None:
        self._now_s += max(seconds, 0.0)

    async def sleep(self, seconds: float) -> None:
        self.sleeps_s.append(seconds)
        self.advance(seconds)
        # Yield like a real sleep so concurrent tasks interleave.
        await asyncio.sleep(0)
