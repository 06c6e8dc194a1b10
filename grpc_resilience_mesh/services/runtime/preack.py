"""What a client may send before it ACKs the server's HTTP/2 SETTINGS: header blocks bounded in
bytes, since grpc core (1.85) holds them to 16 MiB until that ACK (docs/upstream/
grpc-preauth-metadata.md).

`PreAckBudget` reads the client's side of a connection frame by frame (the 24-byte preface,
then 9-byte frame heads; payloads are skipped, never copied) and adds up the declared length of
every HEADERS and CONTINUATION frame. Past `limit` bytes the connection is to be closed before
the frame reaches grpc core. A client SETTINGS frame with the ACK flag, once the server has said
anything (grpc core's first frame is its SETTINGS), ends the watch: from there on grpc core
applies its own 16 KiB limit, so nothing needs reading. A client that ACKs first and a block
after are the common case (grpc's own clients wait for the server's SETTINGS before any call);
curl or nghttp2 send a request or two before the ACK, far below the limit.
"""

from __future__ import annotations

import enum

PREFACE_BYTES = 24
FRAME_HEAD_BYTES = 9
HEADERS, SETTINGS, CONTINUATION = 0x1, 0x4, 0x9
ACK_FLAG = 0x1
PREACK_HEADER_BYTES = 16 * 1024
"""Header block bytes a client may send before its ACK: grpc core's own limit after it."""


class Verdict(enum.Enum):
    WATCHING = "watching"
    ACKED = "acked"
    OVER = "over"


class PreAckBudget:
    """The header bytes one connection has sent before its SETTINGS ACK, fed chunk by chunk."""

    __slots__ = ("_head", "_preface", "_skip", "header_bytes", "limit")

    def __init__(self, limit: int = PREACK_HEADER_BYTES) -> None:
        self.limit = limit
        self.header_bytes = 0
        self._preface = PREFACE_BYTES
        self._head = bytearray()
        self._skip = 0

    def feed(self, data: bytes, server_spoke: bool) -> Verdict:
        """The verdict once `data` (the next bytes from the client) is counted; `server_spoke`
        says whether the server's first bytes have reached the client, so an ACK can be of
        something."""
        pos, end = 0, len(data)
        if self._preface:
            pos = min(self._preface, end)
            self._preface -= pos
        while pos < end:
            if self._skip:
                taken = min(self._skip, end - pos)
                self._skip -= taken
                pos += taken
                continue
            taken = min(FRAME_HEAD_BYTES - len(self._head), end - pos)
            self._head += data[pos : pos + taken]
            pos += taken
            if len(self._head) == FRAME_HEAD_BYTES:
                verdict = self._frame(server_spoke)
                if verdict is not Verdict.WATCHING:
                    return verdict
        return Verdict.WATCHING

    def _frame(self, server_spoke: bool) -> Verdict:
        head = self._head
        length, kind, flags = int.from_bytes(head[:3], "big"), head[3], head[4]
        head.clear()
        if kind == HEADERS or kind == CONTINUATION:
            self.header_bytes += length
            if self.header_bytes > self.limit:
                return Verdict.OVER
        elif kind == SETTINGS and flags & ACK_FLAG and server_spoke:
            return Verdict.ACKED
        self._skip = length
        return Verdict.WATCHING
