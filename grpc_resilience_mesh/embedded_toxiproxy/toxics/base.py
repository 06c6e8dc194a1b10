"""The toxic contract: configuration shared by all connections, state kept per connection."""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol


class Direction(enum.Enum):
    """Which link a toxic acts on: upstream = client->server bytes, downstream = server->client."""

    UPSTREAM = "upstream"
    DOWNSTREAM = "downstream"


@dataclass(slots=True)
class Chunk:
    """Bytes read from a socket with the loop time they arrived (latency is measured from it)."""

    data: bytes
    timestamp: float


@dataclass(eq=False)
class ToxicState:
    """One toxic's state on one link; an update replaces it, as Toxiproxy re-runs the toxic."""

    affected: bool
    interrupted: bool = False
    waiters: set[asyncio.Future[None]] = field(default_factory=set)
    timer: asyncio.TimerHandle | None = None
    bytes_transmitted: int = 0
    bandwidth_free_at: float = 0.0

    def interrupt(self) -> None:
        """Wake every sleep of this toxic: its held chunks are released, as Toxiproxy does."""
        self.interrupted = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)


Emit = Callable[[Chunk], Awaitable[None]]
EmitEof = Callable[[], Awaitable[None]]


class LinkHandle(Protocol):
    """What a toxic may do to the connection it runs on."""

    def now(self) -> float: ...

    async def sleep_until(self, deadline: float, state: ToxicState) -> bool: ...

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle: ...

    def close_connection(self) -> None: ...

    def reset_connection(self) -> None: ...


class Toxic:
    """A toxic as configured through the API; subclasses define attributes and behaviour."""

    type_name: ClassVar[str]
    attribute_names: ClassVar[tuple[str, ...]] = ()
    go_int_type: ClassVar[str] = "int64"  # the attributes' Go type, named in decoding errors

    def __init__(self, name: str, stream: str, direction: Direction, toxicity: float) -> None:
        self.name = name
        self.stream = stream
        self.direction = direction
        self.toxicity = toxicity
        self.version = 0
        self.attributes: dict[str, int] = dict.fromkeys(self.attribute_names, 0)

    def to_json(self) -> dict[str, Any]:
        toxicity: float | int = self.toxicity
        # Go marshals float32(1) as `1`; keep the same text for clients that compare bodies.
        if float(toxicity).is_integer():
            toxicity = int(toxicity)
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type_name,
            "stream": self.stream,
            "toxicity": toxicity,
        }

    def new_state(self, previous: ToxicState | None) -> ToxicState:
        """Roll toxicity for a link, as Toxiproxy does each time it (re)starts a toxic on it."""
        return ToxicState(affected=random.random() < self.toxicity)

    def start(self, link: LinkHandle, state: ToxicState) -> None:
        """Called when the toxic begins on a link (connection opened, toxic added or updated)."""

    def stop(self, link: LinkHandle, state: ToxicState, removed: bool) -> None:
        """Called when the state is superseded by an update (removed=False) or the toxic removed."""

    async def pipe(self, link: LinkHandle, state: ToxicState, chunk: Chunk, emit: Emit) -> None:
        await emit(chunk)

    async def pipe_eof(self, link: LinkHandle, state: ToxicState, emit_eof: EmitEof) -> None:
        await emit_eof()
