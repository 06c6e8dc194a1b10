"""timeout: drops all data and closes the connection after `timeout` ms (0 = never closes)."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Emit,
    LinkHandle,
    Toxic,
    ToxicState,
)


class TimeoutToxic(Toxic):
    """Blackholes a link; removing the toxic closes the connections it held, as in Toxiproxy."""

    type_name = "timeout"
    attribute_names = ("timeout",)

    @property
    def timeout_ms(self) -> int:
        return self.attributes["timeout"]

    def start(self, link: LinkHandle, state: ToxicState) -> None:
        # Like Toxiproxy the clock starts when the toxic starts on the link, so an update restarts
        # it; a negative timeout behaves like 0 there too.
        if state.affected and self.timeout_ms > 0:
            state.timer = link.call_later(self.timeout_ms / 1000.0, link.close_connection)

    def stop(self, link: LinkHandle, state: ToxicState, removed: bool) -> None:
        # Toxiproxy's Cleanup closes the link: data dropped so far can never be delivered.
        if removed and state.affected:
            link.close_connection()

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        return
