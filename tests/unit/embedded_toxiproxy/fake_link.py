"""A fake link for toxic unit tests: a fake clock, recorded timers, and the closes/resets asked for.

`sleep_until` never really sleeps: it moves the fake clock to the deadline (or returns False at
once if the toxic was interrupted), so a test reads delays off the clock instead of a stopwatch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from grpc_resilience_mesh.embedded_toxiproxy.toxics import Chunk, ToxicState


@dataclass
class Timer:
    delay_s: float
    callback: Callable[[], None]
    handle: asyncio.TimerHandle


@dataclass
class FakeLink:
    """Implements `LinkHandle`; `emitted` collects (fake time, bytes) the toxic passed on."""

    loop: asyncio.AbstractEventLoop
    clock: float = 0.0
    sleeps: list[float] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    closed: int = 0
    resets: int = 0
    emitted: list[tuple[float, bytes]] = field(default_factory=list)
    eofs: list[float] = field(default_factory=list)
    interrupt_on_sleep: ToxicState | None = None

    def now(self) -> float:
        return self.clock

    async def sleep_until(self, deadline: float, state: ToxicState) -> bool:
        if self.interrupt_on_sleep is not None:
            self.interrupt_on_sleep.interrupt()
        if state.interrupted:
            return False
        if deadline > self.clock:
            self.sleeps.append(deadline - self.clock)
            self.clock = deadline
        return True

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        handle = asyncio.TimerHandle(self.clock + delay_s, callback, (), self.loop)
        self.timers.append(Timer(delay_s, callback, handle))
        return handle

    def fire_timers(self) -> None:
        """Run every timer that was not cancelled, as if its delay had passed."""
        for timer in self.timers:
            if not timer.handle.cancelled():
                self.clock = max(self.clock, timer.delay_s)
                timer.callback()

    def close_connection(self) -> None:
        self.closed += 1

    def reset_connection(self) -> None:
        self.resets += 1

    async def emit(self, chunk: Chunk) -> None:
        self.emitted.append((self.clock, chunk.data))

    async def emit_eof(self) -> None:
        self.eofs.append(self.clock)

    def data(self) -> bytes:
        return b"".join(data for _, data in self.emitted)
