"""reset_peer: on the first data, waits `timeout` ms and resets the connection with a TCP RST."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Emit,
    EmitEof,
    LinkHandle,
    Toxic,
    ToxicState,
)


class ResetPeerToxic(Toxic):
    """Simulates "connection reset by peer": SO_LINGER 0 then close, on both sides."""

    type_name = "reset_peer"
    attribute_names = ("timeout",)

    @property
    def timeout_ms(self) -> int:
        return self.attributes["timeout"]

    def _trigger(self, link: LinkHandle, state: ToxicState) -> None:
        if state.timer is None:
            state.timer = link.call_later(max(0, self.timeout_ms) / 1000.0, link.reset_connection)

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        # Data after the trigger is dropped: the peer must never see it before the reset.
        self._trigger(link, state)

    async def pipe_eof(self, link: LinkHandle, state: ToxicState, emit_eof: EmitEof) -> None:
        # Toxiproxy's reset also fires on end of stream, so a closing peer still gets an RST.
        self._trigger(link, state)
