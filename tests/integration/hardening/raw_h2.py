"""One unary gRPC call over a hand-written HTTP/2 connection, for headers grpc's own client
refuses to send (a non-ASCII `authorization` value, say). Plaintext, one stream, loopback.

HPACK: requests use literal fields without indexing and without Huffman; answers are decoded
with the static and dynamic tables. grpc's server sends plain (non-Huffman) strings for
non-binary headers; a Huffman-coded string raises rather than being guessed at.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20

STATIC_TABLE: tuple[tuple[bytes, bytes], ...] = tuple(
    (n.encode(), v.encode())
    for n, v in (
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"),
        (":path", "/index.html"), (":scheme", "http"), (":scheme", "https"),
        (":status", "200"), (":status", "204"), (":status", "206"), (":status", "304"),
        (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""),
        ("accept", ""), ("access-control-allow-origin", ""), ("age", ""), ("allow", ""),
        ("authorization", ""), ("cache-control", ""), ("content-disposition", ""),
        ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
        ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""),
        ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
        ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
        ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""),
        ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""),
        ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""),
        ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""),
        ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
    )
)  # fmt: skip


def _int(value: int, prefix_bits: int, first: int) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out, value = bytearray([first | limit]), value - limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def encode_headers(headers: list[tuple[bytes, bytes]]) -> bytes:
    out = bytearray()
    for name, value in headers:
        out += b"\x00" + _int(len(name), 7, 0) + name + _int(len(value), 7, 0) + value
    return bytes(out)


@dataclass
class Decoder:
    dynamic: list[tuple[bytes, bytes]] = field(default_factory=list)

    def _entry(self, index: int) -> tuple[bytes, bytes]:
        if index <= len(STATIC_TABLE):
            return STATIC_TABLE[index - 1]
        return self.dynamic[index - len(STATIC_TABLE) - 1]

    @staticmethod
    def _read_int(block: bytes, pos: int, prefix_bits: int) -> tuple[int, int]:
        limit = (1 << prefix_bits) - 1
        value, pos = block[pos] & limit, pos + 1
        if value < limit:
            return value, pos
        shift = 0
        while True:
            byte, pos = block[pos], pos + 1
            value, shift = value + ((byte & 0x7F) << shift), shift + 7
            if not byte & 0x80:
                return value, pos

    def _read_str(self, block: bytes, pos: int) -> tuple[bytes, int]:
        huffman = block[pos] & 0x80
        length, pos = self._read_int(block, pos, 7)
        if huffman:
            raise ValueError("a Huffman-coded string: this tiny decoder does not read those")
        return block[pos : pos + length], pos + length

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        headers, pos = [], 0
        while pos < len(block):
            byte = block[pos]
            if byte & 0x80:
                index, pos = self._read_int(block, pos, 7)
                headers.append(self._entry(index))
                continue
            if byte & 0xE0 == 0x20:
                _, pos = self._read_int(block, pos, 5)  # dynamic table size update
                continue
            indexing = byte & 0xC0 == 0x40
            index, pos = self._read_int(block, pos, 6 if indexing else 4)
            if index:
                name = self._entry(index)[0]
            else:
                name, pos = self._read_str(block, pos)
            value, pos = self._read_str(block, pos)
            if indexing:
                self.dynamic.insert(0, (name, value))
            headers.append((name, value))
        return headers


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream)


async def _read_frame(reader: asyncio.StreamReader) -> tuple[int, int, int, bytes]:
    head = await reader.readexactly(9)
    length = int.from_bytes(head[:3], "big")
    stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
    return head[3], head[4], stream, await reader.readexactly(length)


async def unary_call(
    addr: str,
    method: str,
    request: bytes,
    metadata: list[tuple[bytes, bytes]],
    timeout_s: float = 5.0,
) -> dict[bytes, bytes]:
    """The call's trailers (or trailers-only headers), e.g. {b"grpc-status": b"16", ...}."""
    host, _, port = addr.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        return await asyncio.wait_for(
            _exchange(reader, writer, addr, method, request, metadata), timeout_s
        )
    finally:
        writer.close()
        await writer.wait_closed()


async def _exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    addr: str,
    method: str,
    request: bytes,
    metadata: list[tuple[bytes, bytes]],
) -> dict[bytes, bytes]:
    headers = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", method.encode()),
        (b":authority", addr.encode()),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
        *metadata,
    ]
    block = encode_headers(headers)
    body = b"\x00" + struct.pack(">I", len(request)) + request
    writer.write(
        PREFACE
        + _frame(SETTINGS, 0, 0, b"")
        + _frame(HEADERS, END_HEADERS, 1, block)
        + block
        + _frame(DATA, END_STREAM, 1, body)
        + body
    )
    await writer.drain()
    seen: dict[bytes, bytes] = {}
    decoder, pending, end_stream = Decoder(), b"", False
    while True:
        kind, flags, stream, payload = await _read_frame(reader)
        if kind == SETTINGS and not flags & ACK:
            writer.write(_frame(SETTINGS, ACK, 0, b""))
        elif kind == PING and not flags & ACK:
            writer.write(_frame(PING, ACK, 0, payload) + payload)
        elif kind == GOAWAY:
            raise ConnectionError(f"GOAWAY {payload[4:8].hex()}")
        elif kind == RST_STREAM and stream == 1:
            raise ConnectionError(f"RST_STREAM {payload.hex()}")
        elif kind in (HEADERS, CONTINUATION) and stream == 1:
            if kind == HEADERS:
                end_stream = bool(flags & END_STREAM)
                if flags & PADDED:
                    payload = payload[1 : len(payload) - payload[0]]
                if flags & PRIORITY:
                    payload = payload[5:]
            pending += payload
            if flags & END_HEADERS:
                seen.update(decoder.decode(pending))
                pending = b""
                if end_stream:
                    return seen
        await writer.drain()


def filler_request(value_bytes: int) -> bytes:
    """A GetHome request's header block with no API key and one metadata value of
    `value_bytes` bytes (HPACK literals, no Huffman)."""
    return encode_headers(
        [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", b"/mesh.v1.Gateway/GetHome"),
            (b":authority", b"gateway"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            (b"x-filler", b"a" * value_bytes),
        ]
    )
