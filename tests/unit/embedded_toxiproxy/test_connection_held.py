"""Bytes a side delivers before the connection's links exist are relayed, in order, once they do.

The client side pauses reading until the upstream is dialled, but an event loop may hand over
what it had already read (uvloop can), and an upstream may speak first. Here the bytes are
delivered to the protocol directly, before `Connection._open` has run, which is exactly that.
"""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.connection import ClientSide, Connection
from grpc_resilience_mesh.embedded_toxiproxy.proxy import Proxy
from grpc_resilience_mesh.embedded_toxiproxy.server import LOOP_ENV, proxy_loop


class _Transport(asyncio.Transport):
    """The client's socket, seen from the proxy: records what the proxy writes to it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.eof = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def write_eof(self) -> None:
        self.eof = True

    def can_write_eof(self) -> bool:
        return True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


async def test_bytes_and_eof_before_the_links_are_relayed_in_order() -> None:
    received = bytearray()
    got_eof = asyncio.Event()

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await reader.read())  # until the proxy relays the client's EOF
        got_eof.set()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        proxy = Proxy("p", "127.0.0.1:0", f"127.0.0.1:{port}")
        client = ClientSide(proxy)
        client.connection_made(_Transport())  # creates the Connection; its _open has not run
        conn = cast(Connection, client.conn)
        assert conn.outgoing(client) is None
        client.data_received(b"PRI * ")
        client.data_received(b"HTTP/2.0")
        client.eof_received()
        await asyncio.wait_for(got_eof.wait(), 5)
        assert bytes(received) == b"PRI * HTTP/2.0"
        assert conn.outgoing(client) is not None
    finally:
        server.close()
        await server.wait_closed()


async def test_an_upstream_that_speaks_first_is_relayed_to_the_client() -> None:
    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"SETTINGS")  # as an HTTP/2 server does on accepting
        await writer.drain()
        await reader.read()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        proxy = Proxy("p", "127.0.0.1:0", f"127.0.0.1:{port}")
        client = ClientSide(proxy)
        transport = _Transport()
        client.connection_made(transport)
        for _ in range(200):
            if transport.written:
                break
            await asyncio.sleep(0.01)
        assert bytes(transport.written) == b"SETTINGS"
        cast(Connection, client.conn).close()
    finally:
        server.close()
        await server.wait_closed()


def test_the_proxy_process_runs_on_uvloop_unless_told_otherwise() -> None:
    pytest.importorskip("uvloop")
    assert proxy_loop({}) == "uvloop"
    assert proxy_loop({LOOP_ENV: "asyncio"}) == "asyncio"
    with pytest.raises(ValueError, match="MESH_PROXY_LOOP='libev': expected uvloop or asyncio"):
        proxy_loop({LOOP_ENV: "libev"})
