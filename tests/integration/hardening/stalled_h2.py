"""Streams whose client never reads: HTTP/2 connections (the `h2` library) that announce a
stream window of 0, never send a WINDOW_UPDATE and never read a byte of what comes back."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

import h2.config
import h2.connection
import h2.settings


@dataclass
class Stalled:
    """One such connection; `close()` lets go of it."""

    writer: asyncio.StreamWriter

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def stall(
    addr: str,
    path: str,
    request: bytes,
    streams: int,
    key: str = "",
    grpc_timeout: str = "",
) -> Stalled:
    """Opens `streams` calls of `path` on one new connection to `addr`, each sending `request`
    (with the API key and the grpc-timeout header when given), and leaves them there."""
    host, _, port = addr.rpartition(":")
    _, writer = await asyncio.open_connection(host, int(port))
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True, header_encoding=None)
    )
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    body = b"\x00" + struct.pack(">I", len(request)) + request
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", addr),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        *((("authorization", f"Bearer {key}"),) if key else ()),
        *((("grpc-timeout", grpc_timeout),) if grpc_timeout else ()),
    ]
    for _ in range(streams):
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, headers)
        conn.send_data(stream_id, body, end_stream=True)
    writer.write(conn.data_to_send())
    await writer.drain()
    return Stalled(writer)
