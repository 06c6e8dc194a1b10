"""One direction of a proxied connection: a plain relay, or the current toxic chain if any."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Protocol

from grpc_resilience_mesh.embedded_toxiproxy.toxic_collection import ToxicCollection
from grpc_resilience_mesh.embedded_toxiproxy.toxics import Chunk, Direction, Toxic, ToxicState


class End(Protocol):
    """What a link needs of a socket it reads from or writes to (connection.Side)."""

    def write(self, data: bytes) -> None: ...
    def write_eof(self) -> None: ...
    async def writable(self) -> None: ...
    def pause_reading_for(self, reason: str) -> None: ...
    def resume_reading_for(self, reason: str) -> None: ...


class Owner(Protocol):
    """What a link needs of the connection it belongs to (connection.Connection)."""

    closed: bool

    def link_finished(self) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    def reset(self) -> None: ...


log = logging.getLogger(__name__)

# Chunks waiting for the toxic chain; above this the source socket stops being read.
_QUEUE_HIGH_BYTES = 1 << 20
_QUEUE_LOW_BYTES = 1 << 18


class Link:
    """Moves bytes from `source` to `dest` through the toxics of `direction`."""

    def __init__(
        self,
        conn: Owner,
        direction: Direction,
        source: End,
        dest: End,
        toxics: ToxicCollection,
    ) -> None:
        self.conn = conn
        self.direction = direction
        self.source = source
        self.dest = dest
        self._toxics = toxics
        self._loop = asyncio.get_running_loop()
        self._queue: deque[Chunk | None] = deque()
        self._queued_bytes = 0
        self._pump: asyncio.Task[None] | None = None
        self._states: dict[Toxic, ToxicState] = {}
        self._versions: dict[Toxic, int] = {}
        self.finished = False

    # Data path -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if self._pump is None and not self._toxics.chain(self.direction):
            # Fast path: no toxic and nothing in flight, so ordering cannot be broken.
            self.dest.write(data)
            return
        self._queue.append(Chunk(data, self._loop.time()))
        self._queued_bytes += len(data)
        if self._queued_bytes > _QUEUE_HIGH_BYTES:
            self.source.pause_reading_for("queue")
        self._start_pump()

    def feed_eof(self) -> None:
        if self._pump is None and not self._toxics.chain(self.direction):
            self._finish()
            return
        self._queue.append(None)
        self._start_pump()

    def _start_pump(self) -> None:
        if self._pump is None:
            self._pump = self._loop.create_task(self._run_pump())

    async def _run_pump(self) -> None:
        try:
            while self._queue and not self.conn.closed:
                item = self._queue.popleft()
                if item is None:
                    await self._through_eof(self._toxics.chain(self.direction), 0)
                    continue
                self._queued_bytes -= len(item.data)
                if self._queued_bytes < _QUEUE_LOW_BYTES:
                    self.source.resume_reading_for("queue")
                await self._through(self._toxics.chain(self.direction), 0, item)
        except Exception:
            log.exception("toxic chain failed; aborting connection")
            self.conn.abort()
        finally:
            self._pump = None

    def _active(self, chain: tuple[Toxic, ...], index: int) -> int:
        """Index of the next toxic that applies here (still present, toxicity rolled in)."""
        while index < len(chain):
            state = self._states.get(chain[index])
            if state is not None and state.affected:
                return index
            index += 1
        return index

    async def _through(self, chain: tuple[Toxic, ...], index: int, chunk: Chunk) -> None:
        index = self._active(chain, index)
        if index == len(chain):
            await self._deliver(chunk.data)
            return
        toxic = chain[index]

        async def emit(out: Chunk) -> None:
            await self._through(chain, index + 1, out)

        await toxic.pipe(self, self._states[toxic], chunk, emit)

    async def _through_eof(self, chain: tuple[Toxic, ...], index: int) -> None:
        index = self._active(chain, index)
        if index == len(chain):
            self._finish()
            return
        toxic = chain[index]

        async def emit_eof() -> None:
            await self._through_eof(chain, index + 1)

        await toxic.pipe_eof(self, self._states[toxic], emit_eof)

    async def _deliver(self, data: bytes) -> None:
        if self.conn.closed or not data:
            return
        self.dest.write(data)
        await self.dest.writable()

    def _finish(self) -> None:
        self.finished = True
        self.dest.write_eof()
        self.conn.link_finished()

    # Toxic changes ---------------------------------------------------------------------------

    def sync_toxics(self, removed: tuple[Toxic, ...]) -> None:
        """Bring per-connection toxic state in line with the proxy's chain for this direction."""
        for toxic in removed:
            state = self._states.pop(toxic, None)
            self._versions.pop(toxic, None)
            if state is not None:
                state.interrupt()
                toxic.stop(self, state, removed=True)
        for toxic in self._toxics.chain(self.direction):
            if self.conn.closed:
                return
            previous = self._states.get(toxic)
            if previous is not None and self._versions[toxic] == toxic.version:
                continue
            if previous is not None:
                previous.interrupt()
                toxic.stop(self, previous, removed=False)
            state = toxic.new_state(previous)
            self._states[toxic] = state
            self._versions[toxic] = toxic.version
            toxic.start(self, state)

    def shutdown(self) -> None:
        """The connection is gone: release every sleeping chunk and timer."""
        for state in self._states.values():
            state.interrupt()
        self._states.clear()
        self._versions.clear()
        self._queue.clear()
        if self._pump is not None:
            self._pump.cancel()

    # LinkHandle, used by toxics --------------------------------------------------------------

    def now(self) -> float:
        return self._loop.time()

    async def sleep_until(self, deadline: float, state: ToxicState) -> bool:
        """Sleep until `deadline` (loop time); False if the toxic was interrupted first."""
        if state.interrupted:
            return False
        delay = deadline - self._loop.time()
        if delay <= 0:
            return True
        waiter: asyncio.Future[None] = self._loop.create_future()
        state.waiters.add(waiter)
        timer = self._loop.call_later(delay, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            state.waiters.discard(waiter)
        return not state.interrupted

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self._loop.call_later(delay_s, callback)

    def close_connection(self) -> None:
        self.conn.close()

    def reset_connection(self) -> None:
        self.conn.reset()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
