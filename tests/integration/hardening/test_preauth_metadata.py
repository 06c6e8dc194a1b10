"""Header blocks sent before the client ACKs the gateway's SETTINGS: grpc core then holds them to
the HTTP/2 default limit (16 MiB), not the gateway's 16 KiB (docs/upstream/
grpc-preauth-metadata.md), so what bounds them in grpc core is time: a peer that does not ACK
within SETTINGS_ACK_TIMEOUT_S is disconnected, and what it sent is freed. That is tested here
without the relay (PUBLIC_FRONT=0, as the services behind the gateway run); with it, the relay
closes such a connection past 16 KiB (test_preauth_flood)."""

from __future__ import annotations

import asyncio
import time

from tests.integration.hardening.inproc_services import serving
from tests.integration.hardening.raw_h2 import (
    CONTINUATION,
    HEADERS,
    PREFACE,
    SETTINGS,
    _frame,
    filler_request,
)

STREAMS = 50
VALUE_BYTES = 1024 * 1024
"""Far past the 16 KiB limit, far below core's 16 MiB before the ACK: held, not refused."""
FRAME = 16 * 1024
SETTINGS_ACK_TIMEOUT_S = 2.0


def _rss_mib() -> int:
    with open("/proc/self/status") as status:
        kib = next(line for line in status if line.startswith("VmRSS")).split()[1]
    return int(kib) // 1024


def _held_block() -> list[bytes]:
    """A request's HEADERS and CONTINUATION frames with no END_HEADERS, so the block stays open:
    no API key, one metadata value of VALUE_BYTES."""
    block = filler_request(VALUE_BYTES)
    chunks = [block[i : i + FRAME] for i in range(0, len(block) - FRAME, FRAME)]
    return [
        _frame(HEADERS if i == 0 else CONTINUATION, 0, 1, chunk) + chunk
        for i, chunk in enumerate(chunks)
    ]


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _send_unacked(addr: str) -> Conn:
    """Preface, our SETTINGS, then the held block; the server's SETTINGS are never ACKed."""
    host, _, port = addr.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(PREFACE + _frame(SETTINGS, 0, 0, b""))
    for frame in _held_block():
        writer.write(frame)
        await writer.drain()
    return reader, writer  # a writer no one holds closes its connection


async def _closed_by_server(reader: asyncio.StreamReader) -> float:
    """When the server ended the connection (monotonic)."""
    try:
        while await reader.read(1 << 16):
            pass
    except ConnectionError:
        pass
    return time.monotonic()


async def test_unacked_header_blocks_are_dropped_with_their_connection() -> None:
    env = {
        "MESH_API_KEYS": "preauth-key",
        "SETTINGS_ACK_TIMEOUT_S": str(SETTINGS_ACK_TIMEOUT_S),
        "PUBLIC_FRONT": "0",
    }
    async with serving(env=env) as served:
        before = _rss_mib()
        started = time.monotonic()
        conns = [await _send_unacked(served.listen["gateway"]) for _ in range(STREAMS)]
        try:
            sent = time.monotonic()
            held = _rss_mib()
            ends = await asyncio.wait_for(
                asyncio.gather(*(_closed_by_server(r) for r, _ in conns)), timeout=15
            )
        finally:
            for _, writer in conns:
                writer.close()
        await asyncio.sleep(0.5)
        print(
            f"RSS {before} MiB, {held} MiB with {STREAMS} x {VALUE_BYTES >> 20} MiB held"
            f" ({sent - started:.1f} s to send), {_rss_mib()} MiB after"
        )
    assert max(ends) - started < sent - started + SETTINGS_ACK_TIMEOUT_S + 3.0
