"""slicer: splits chunks into pieces of about `average_size` bytes, `delay` microseconds apart."""

from __future__ import annotations

import random

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Emit,
    LinkHandle,
    Toxic,
    ToxicState,
)


class SlicerToxic(Toxic):
    """Turns each read into many small writes, as a congested network would."""

    type_name = "slicer"
    attribute_names = ("average_size", "size_variation", "delay")
    go_int_type = "int"

    @property
    def average_size_bytes(self) -> int:
        # Toxiproxy recurses forever on average_size <= 0; one byte is the smallest useful slice.
        return max(1, self.attributes["average_size"])

    @property
    def size_variation_bytes(self) -> int:
        return self.attributes["size_variation"]

    @property
    def delay_us(self) -> int:
        return self.attributes["delay"]

    def boundaries(self, length: int) -> list[int]:
        """Toxiproxy's halving split, iterative and with the split point kept inside the range."""
        cuts: list[int] = []
        pending = [(0, length)]
        while pending:
            start, end = pending.pop()
            size = end - start
            if size <= 1 or size - self.average_size_bytes <= self.size_variation_bytes:
                cuts.append(end)
                continue
            mid = start + (end - start) // 2
            variation = self.size_variation_bytes
            if variation > 0:
                mid += random.randrange(2 * variation) - variation
            mid = min(max(mid, start + 1), end - 1)
            pending.append((mid, end))
            pending.append((start, mid))
        return cuts

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        start = 0
        for end in self.boundaries(len(chunk.data)):
            await emit(Chunk(chunk.data[start:end], chunk.timestamp))
            start = end
            if start >= len(chunk.data):
                return
            if not await link.sleep_until(link.now() + self.delay_us / 1e6, state):
                await emit(Chunk(chunk.data[start:], chunk.timestamp))
                return
