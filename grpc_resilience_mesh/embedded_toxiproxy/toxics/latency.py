"""latency: delays every chunk by `latency` +/- `jitter` milliseconds from the time it arrived."""

from __future__ import annotations

import random

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Emit,
    LinkHandle,
    Toxic,
    ToxicState,
)


class LatencyToxic(Toxic):
    """Delays chunks without serialising them: each one waits relative to its own arrival."""

    type_name = "latency"
    attribute_names = ("latency", "jitter")

    @property
    def latency_ms(self) -> int:
        return self.attributes["latency"]

    @property
    def jitter_ms(self) -> int:
        return self.attributes["jitter"]

    def delay_s(self) -> float:
        delay_ms = self.latency_ms
        if self.jitter_ms > 0:
            # Same range as Toxiproxy's rand.Int63n(2*jitter) - jitter.
            delay_ms += random.randrange(2 * self.jitter_ms) - self.jitter_ms
        return delay_ms / 1000.0

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        deadline = chunk.timestamp + self.delay_s()
        # An interrupted sleep (toxic updated or removed) releases the chunk at once.
        if await link.sleep_until(deadline, state) and deadline > chunk.timestamp:
            # The next latency toxic counts from here, so stacked latencies add up.
            chunk.timestamp = deadline
        await emit(chunk)
