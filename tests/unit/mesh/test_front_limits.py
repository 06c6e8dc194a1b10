"""The public port's relay and idle limit: their settings, the header bytes the relay lets
through before the SETTINGS ACK, and which connection it closes past a cap."""

from __future__ import annotations

import asyncio
import shutil
import stat
from collections.abc import Iterator

import pytest

from grpc_resilience_mesh.services.runtime.config import ConfigError, ServiceConfig
from grpc_resilience_mesh.services.runtime.connections import (
    DESCRIPTOR_RESERVE,
    connection_cap,
    idle_options,
)
from grpc_resilience_mesh.services.runtime.front import ClientSide, Front, FrontLimits, GrpcSide
from grpc_resilience_mesh.services.runtime.preack import PREFACE_BYTES, PreAckBudget, Verdict

PREFACE = b"P" * PREFACE_BYTES


def frame(kind: int, flags: int, length: int) -> bytes:
    return length.to_bytes(3, "big") + bytes([kind, flags]) + bytes(4) + b"x" * length


SETTINGS, SETTINGS_ACK = frame(4, 0, 6), frame(4, 1, 0)


def headers(length: int) -> bytes:
    return frame(1, 0, length)


def test_relay_settings_have_documented_defaults_and_bounds() -> None:
    gateway = ServiceConfig.from_env("gateway", {})
    assert (gateway.public_front, gateway.max_connections_per_peer) == (True, 512)
    assert ServiceConfig.from_env("profile", {}).public_front is False
    assert ServiceConfig.from_env("gateway", {"PUBLIC_FRONT": "off"}).public_front is False
    assert gateway.idle_timeout_s == 300.0
    assert ServiceConfig.from_env("profile", {}).idle_timeout_s is None
    assert idle_options(gateway.idle_timeout_s) == [("grpc.max_connection_idle_ms", 300_000)]
    assert idle_options(None) == []
    for env, var in (
        ({"MAX_CONNECTIONS_PER_PEER": "0"}, "MAX_CONNECTIONS_PER_PEER"),
        ({"PUBLIC_FRONT": "maybe"}, "PUBLIC_FRONT"),
        ({"CONNECTION_IDLE_TIMEOUT_S": "0"}, "CONNECTION_IDLE_TIMEOUT_S"),
        ({"CONNECTION_IDLE_TIMEOUT_S": "86401"}, "CONNECTION_IDLE_TIMEOUT_S"),
    ):
        with pytest.raises(ConfigError, match=rf"^{var}="):
            ServiceConfig.from_env("gateway", env)


def test_a_relayed_connection_counts_three_descriptors() -> None:
    assert connection_cap(4096, 10_000, per_connection=3) == (10_000 - DESCRIPTOR_RESERVE) // 3
    assert connection_cap(4096, 1 << 20, per_connection=3) == 4096


def test_header_bytes_before_the_ack_are_counted_across_chunks() -> None:
    budget = PreAckBudget(limit=100)
    data = PREFACE + SETTINGS + headers(60) + frame(9, 0, 40)
    verdicts = [budget.feed(data[i : i + 7], server_spoke=True) for i in range(0, len(data), 7)]
    assert set(verdicts) == {Verdict.WATCHING}
    assert budget.header_bytes == 100
    assert budget.feed(frame(9, 0, 1), server_spoke=True) is Verdict.OVER


def test_the_ack_ends_the_watch_only_once_the_server_has_spoken() -> None:
    early = PreAckBudget(limit=100)
    assert early.feed(PREFACE + SETTINGS_ACK + headers(101), server_spoke=False) is Verdict.OVER
    budget = PreAckBudget(limit=100)
    assert budget.feed(PREFACE + SETTINGS, server_spoke=False) is Verdict.WATCHING
    assert budget.feed(SETTINGS_ACK + headers(200), server_spoke=True) is Verdict.ACKED


def test_a_data_payload_that_looks_like_frames_is_skipped() -> None:
    budget = PreAckBudget(limit=100)
    payload = headers(500)  # inside a DATA frame: bytes, not a frame
    data = PREFACE + len(payload).to_bytes(3, "big") + bytes(6) + payload
    assert budget.feed(data, server_spoke=True) is Verdict.WATCHING
    assert budget.header_bytes == 0


@pytest.fixture
def front() -> Iterator[Front]:
    made = Front(FrontLimits(max_connections=4, max_per_peer=2))
    yield made
    shutil.rmtree(made.folder, ignore_errors=True)


def _admit(front: Front, peer: str) -> ClientSide:
    conn = ClientSide(front)
    conn.peer = peer
    front.admit(conn)
    return conn


def test_past_a_cap_the_longest_silent_connection_of_that_pool_goes(front: Front) -> None:
    a1, a2 = _admit(front, "10.0.0.1"), _admit(front, "10.0.0.1")
    b1 = _admit(front, "10.0.0.2")
    front.conns.move_to_end(a1)  # a1 spoke last: a2 is now a's longest silent
    assert a1.pool is not None
    a1.pool.move_to_end(a1)
    a3 = _admit(front, "10.0.0.1")
    assert list(front.conns) == [b1, a1, a3] and a2.pool is None
    c1, c2 = _admit(front, "10.0.0.3"), _admit(front, "10.0.0.4")
    assert list(front.conns) == [a1, a3, c1, c2]  # past 4 in all: b1, silent longest, went
    assert front.closed_at_cap == 2 and "10.0.0.2" not in front.peers
    front.forget(c2)
    front.forget(c2)
    assert list(front.conns) == [a1, a3, c1] and "10.0.0.4" not in front.peers


async def test_the_grpc_socket_folder_is_ours_alone_and_goes_with_the_relay() -> None:
    made = Front(FrontLimits())
    assert stat.S_IMODE(made.folder.stat().st_mode) == 0o700
    assert made.upstream_addr == f"unix:{made.folder}/grpc.sock"
    await made.close()
    assert not made.folder.exists()


class _Transport(asyncio.Transport):
    """What the relay calls on a transport, recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.reading = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return False


def test_bytes_before_the_grpc_side_connects_are_held_and_sent_first_in_order(
    front: Front,
) -> None:
    """Python 3.11 before 3.11.7 (Debian 12's 3.11.2, the image's) ignores a pause_reading made
    in connection_made, so a client's first bytes can arrive before the grpc side is connected:
    they failed an assertion and the connection died (the compose gateway lost 3 of 6 calls)."""
    conn, client = _admit(front, "10.0.0.9"), _Transport()
    conn.transport = client
    conn.data_received(PREFACE)
    conn.data_received(SETTINGS)
    assert client.reading is False and conn.early == [PREFACE, SETTINGS]
    grpc_side = _Transport()
    GrpcSide(conn).connection_made(grpc_side)
    conn.data_received(SETTINGS_ACK)
    assert grpc_side.written == [PREFACE + SETTINGS, SETTINGS_ACK]
    assert client.reading is True and conn.early == []
