"""The kv example on loopback with the embedded Toxiproxy between its client and its server.

The proxy runs on a thread and loop of its own, so a test may drive it with the blocking
client from a listener (`heal`), and the proxy keeps moving bytes while the test's loop waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TypeVar

from examples.kv.server import kv_server
from examples.kv.store import KeyValueStore
from grpc_aio_resilience import Event, EventBus, ServerPolicy
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.embedded_toxiproxy.server import ToxiproxyServer

E = TypeVar("E")


@contextmanager
def toxiproxy() -> Iterator[ToxiproxyClient]:
    """An embedded Toxiproxy on 127.0.0.1, running on a thread of its own; its API's client."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="toxiproxy", daemon=True)
    thread.start()
    server = ToxiproxyServer("127.0.0.1", 0)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(5.0)
    try:
        yield ToxiproxyClient(server.base_url, timeout_s=5.0)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(5.0)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5.0)
        loop.close()


async def proxy(client: ToxiproxyClient, name: str, upstream: str) -> str:
    """A proxy named `name` in front of `upstream`; the address it listens on."""
    created = await asyncio.to_thread(client.create_proxy, name, "127.0.0.1:0", upstream)
    return str(created["listen"])


@asynccontextmanager
async def kv_serving(
    store: KeyValueStore | None = None,
    policy: ServerPolicy | None = None,
    bus: EventBus | None = None,
) -> AsyncIterator[str]:
    """The example's server (examples/kv/server.py) on 127.0.0.1:0; yields its address."""
    server = kv_server(store or KeyValueStore(), policy or ServerPolicy(), bus or EventBus())
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


class Recorder:
    """Every event a bus emits, in order."""

    def __init__(self, bus: EventBus) -> None:
        self.events: list[Event] = []
        bus.subscribe(self.events.append)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]
