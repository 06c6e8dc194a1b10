"""bandwidth: limits a link to `rate` KB/s (1 KB = 1000 bytes, as in Toxiproxy)."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Emit,
    LinkHandle,
    Toxic,
    ToxicState,
)

# Toxiproxy releases at most 100 ms worth of bytes at a time, so large reads trickle out.
_SLICE_S = 0.1


class BandwidthToxic(Toxic):
    """Paces bytes so that the link never exceeds the rate."""

    type_name = "bandwidth"
    attribute_names = ("rate",)

    @property
    def rate_kb_per_s(self) -> int:
        return self.attributes["rate"]

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        rate_bytes_per_s = self.rate_kb_per_s * 1000
        if rate_bytes_per_s <= 0:
            # Toxiproxy stalls (rate 0) or panics (rate < 0); we treat both as "no limit".
            await emit(chunk)
            return
        slice_bytes = max(1, int(rate_bytes_per_s * _SLICE_S))
        data = chunk.data
        while data:
            piece, data = data[:slice_bytes], data[slice_bytes:]
            start = max(link.now(), state.bandwidth_free_at)
            state.bandwidth_free_at = start + len(piece) / rate_bytes_per_s
            if not await link.sleep_until(state.bandwidth_free_at, state):
                await emit(Chunk(piece + data, chunk.timestamp))
                return
            await emit(Chunk(piece, chunk.timestamp))
