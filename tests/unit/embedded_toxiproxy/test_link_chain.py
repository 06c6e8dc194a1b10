"""The link: bytes go through the toxic chain in order, per-connection state, EOF and closes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from grpc_resilience_mesh.embedded_toxiproxy.connection import Connection, Side
from grpc_resilience_mesh.embedded_toxiproxy.link import Link
from grpc_resilience_mesh.embedded_toxiproxy.toxic_collection import ToxicCollection
from grpc_resilience_mesh.embedded_toxiproxy.toxics import TOXIC_TYPES, Direction, Toxic
from tests.support.polling import await_until


@dataclass
class FakeConn:
    closed: bool = False
    finished: int = 0
    aborted: int = 0

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted += 1
        self.closed = True

    def link_finished(self) -> None:
        self.finished += 1


@dataclass
class FakeSide:
    written: list[bytes] = field(default_factory=list)
    eof: bool = False
    paused: set[str] = field(default_factory=set)

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def write_eof(self) -> None:
        self.eof = True

    async def writable(self) -> None:
        return

    def pause_reading_for(self, reason: str) -> None:
        self.paused.add(reason)

    def resume_reading_for(self, reason: str) -> None:
        self.paused.discard(reason)


@dataclass
class FakeToxics:
    toxics: tuple[Toxic, ...] = ()

    def chain(self, direction: Direction) -> tuple[Toxic, ...]:
        return self.toxics


def toxic(type_name: str, toxicity: float = 1.0, **attributes: int) -> Toxic:
    made = TOXIC_TYPES[type_name](type_name, "downstream", Direction.DOWNSTREAM, toxicity)
    made.attributes.update(attributes)
    return made


def make_link(*toxics: Toxic) -> tuple[Link, FakeConn, FakeSide]:
    conn, dest, chain = FakeConn(), FakeSide(), FakeToxics(toxics)
    link = Link(
        cast(Connection, conn),
        Direction.DOWNSTREAM,
        cast(Side, FakeSide()),
        cast(Side, dest),
        cast(ToxicCollection, chain),
    )
    link.sync_toxics(())
    return link, conn, dest


async def test_without_toxics_bytes_and_eof_pass_straight_through() -> None:
    link, conn, dest = make_link()
    link.feed(b"ab")
    link.feed(b"cd")
    link.feed_eof()
    assert dest.written == [b"ab", b"cd"]  # synchronously: the fast path
    assert dest.eof and conn.finished == 1


async def test_chain_keeps_order_and_delivers_eof_last() -> None:
    link, conn, dest = make_link(toxic("noop"), toxic("slicer", average_size=2, delay=0))
    for data in (b"hello", b" ", b"world"):
        link.feed(data)
    link.feed_eof()
    await await_until(lambda: dest.eof, timeout_s=2, what="eof through the chain")
    assert b"".join(dest.written) == b"hello world"
    assert len(dest.written) > 3  # the slicer really ran
    assert conn.finished == 1


async def test_toxicity_zero_skips_the_toxic_on_this_connection() -> None:
    link, _, dest = make_link(toxic("timeout", toxicity=0.0, timeout=0))
    link.feed(b"kept")
    await await_until(lambda: dest.written, timeout_s=2, what="data past an unaffected toxic")
    assert dest.written == [b"kept"]


async def test_limit_data_closes_the_connection_and_stops_delivery() -> None:
    link, conn, dest = make_link(toxic("limit_data", bytes=3))
    link.feed(b"abcdef")
    link.feed(b"ghi")
    await await_until(lambda: conn.closed, timeout_s=2, what="connection closed at the limit")
    assert b"".join(dest.written) == b"abc"


async def test_removing_a_toxic_interrupts_it_and_runs_its_cleanup() -> None:
    timeout = toxic("timeout", timeout=0)
    link, conn, dest = make_link(timeout)
    link.feed(b"dropped")
    await await_until(lambda: link._pump is None, timeout_s=2, what="chain idle")
    assert dest.written == [] and not conn.closed
    link.sync_toxics((timeout,))
    assert conn.closed  # Toxiproxy closes a link whose data a timeout toxic dropped


async def test_an_update_restarts_the_toxic_state() -> None:
    limit = toxic("limit_data", bytes=4)
    link, conn, dest = make_link(limit)
    link.feed(b"ab")
    await await_until(lambda: dest.written, timeout_s=2, what="first bytes")
    limit.attributes["bytes"] = 5
    limit.version += 1
    link.sync_toxics(())
    link.feed(b"cdefg")
    await await_until(lambda: conn.closed, timeout_s=2, what="closed at the new limit")
    assert b"".join(dest.written) == b"abcde"  # the count carried over, the limit is the new one
