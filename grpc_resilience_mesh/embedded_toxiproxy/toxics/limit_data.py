"""limit_data: closes the connection once `bytes` bytes have gone through the link."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Emit,
    LinkHandle,
    Toxic,
    ToxicState,
)


class LimitDataToxic(Toxic):
    """Truncates the stream at the limit, then closes; the count survives toxic updates."""

    type_name = "limit_data"
    attribute_names = ("bytes",)

    @property
    def limit_bytes(self) -> int:
        return self.attributes["bytes"]

    def new_state(self, previous: ToxicState | None) -> ToxicState:
        state = super().new_state(previous)
        if previous is not None:
            state.bytes_transmitted = previous.bytes_transmitted
        return state

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        remaining = max(0, self.limit_bytes - state.bytes_transmitted)
        if remaining < len(chunk.data):
            chunk = Chunk(chunk.data[:remaining], chunk.timestamp)
        if chunk.data:
            await emit(chunk)
            state.bytes_transmitted += len(chunk.data)
        if self.limit_bytes - state.bytes_transmitted <= 0:
            link.close_connection()
