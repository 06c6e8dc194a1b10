"""Streams whose client never reads: HTTP/2 connections (the `h2` library) that announce a
stream window of 0, never send a WINDOW_UPDATE and, once they have ACKed the server's SETTINGS
(as every real client does), never read a byte of what comes back.

The ACK matters: a client that never ACKs is disconnected after SETTINGS_ACK_TIMEOUT_S
(test_preauth_metadata), which would end these streams by another mechanism than the one
under test here (the stream write timeout)."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

import h2.config
import h2.connection
import h2.events
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
    reader, writer = await asyncio.open_connection(host, int(port))
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
    await _ack_settings(reader, writer, conn)
    return Stalled(writer)


async def _ack_settings(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: h2.connection.H2Connection
) -> None:
    """Reads until the server's SETTINGS arrive and sends h2's ACK of them; nothing after."""
    async with asyncio.timeout(5):
        while True:
            data = await reader.read(65536)
            if not data:
                return
            if any(isinstance(e, h2.events.RemoteSettingsChanged) for e in conn.receive_data(data)):
                break
    writer.write(conn.data_to_send())
    await writer.drain()
