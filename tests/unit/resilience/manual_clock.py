"""A fake clock whose sleeps wait until the test advances time past them (never really)."""

from __future__ import annotations

import asyncio


class ManualClock:
    """`sleep` parks the caller until `advance` moves `now` past its wake-up time, so a test
    can hold waiters in a queue and time them out at the instant it chooses."""

    def __init__(self, start_s: float = 1000.0) -> None:
        self._now_s = start_s
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now_s

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now_s + max(seconds, 0.0), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Moves time on and lets every task woken by it run."""
        await settle()
        self._now_s += seconds
        for wake_s, future in self._sleepers:
            if wake_s <= self._now_s and not future.done():
                future.set_result(None)
        self._sleepers = [(w, f) for w, f in self._sleepers if not f.done()]
        await settle()


async def settle(rounds: int = 10) -> None:
    """Lets ready tasks run to their next wait."""
    for _ in range(rounds):
        await asyncio.sleep(0)
