"""slow_close: delays the close of the connection by `delay` milliseconds."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    EmitEof,
    LinkHandle,
    Toxic,
    ToxicState,
)


class SlowCloseToxic(Toxic):
    """Holds back the end of the stream so the peer sees the close late."""

    type_name = "slow_close"
    attribute_names = ("delay",)

    @property
    def delay_ms(self) -> int:
        return self.attributes["delay"]

    async def pipe_eof(self, link: LinkHandle, state: ToxicState, emit_eof: EmitEof) -> None:
        await link.sleep_until(link.now() + self.delay_ms / 1000.0, state)
        await emit_eof()
