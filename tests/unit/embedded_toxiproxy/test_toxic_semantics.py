"""Each toxic against a fake link: Toxiproxy's semantics, read off a fake clock (no sleeping)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.toxics import TOXIC_TYPES, Chunk, Direction, Toxic
from tests.unit.embedded_toxiproxy.fake_link import FakeLink


def make(type_name: str, toxicity: float = 1.0, **attributes: int) -> Toxic:
    toxic = TOXIC_TYPES[type_name](type_name, "downstream", Direction.DOWNSTREAM, toxicity)
    toxic.attributes.update(attributes)
    return toxic


@pytest.fixture
async def link() -> AsyncIterator[FakeLink]:
    yield FakeLink(asyncio.get_running_loop())


async def feed(link: FakeLink, toxic: Toxic, *chunks: tuple[float, bytes]) -> None:
    state = toxic.new_state(None)
    toxic.start(link, state)
    for arrived, data in chunks:
        await toxic.pipe(link, state, Chunk(data, arrived), link.emit)


async def test_noop_passes_data_and_eof_unchanged(link: FakeLink) -> None:
    toxic = make("noop")
    state = toxic.new_state(None)
    await toxic.pipe(link, state, Chunk(b"hello", 0.0), link.emit)
    await toxic.pipe_eof(link, state, link.emit_eof)
    assert link.emitted == [(0.0, b"hello")]
    assert link.eofs == [0.0]
    assert link.sleeps == []


async def test_latency_delays_each_chunk_from_its_own_arrival(link: FakeLink) -> None:
    # Pipelined, not serialised: the chunk that arrived at 10 ms leaves at 110 ms, not 200 ms.
    await feed(link, make("latency", latency=100), (0.0, b"a"), (0.010, b"b"))
    assert [data for _, data in link.emitted] == [b"a", b"b"]
    assert [time for time, _ in link.emitted] == pytest.approx([0.100, 0.110])


async def test_latency_with_jitter_stays_within_latency_plus_minus_jitter(link: FakeLink) -> None:
    random.seed(14)
    toxic = make("latency", latency=100, jitter=20)
    state = toxic.new_state(None)
    delays = []
    for _ in range(200):
        arrived = link.clock
        await toxic.pipe(link, state, Chunk(b"x", arrived), link.emit)
        delays.append(link.emitted[-1][0] - arrived)
    assert all(0.080 - 1e-9 <= delay < 0.120 for delay in delays), delays
    assert max(delays) - min(delays) > 0.020  # the jitter really varies the delay


async def test_stacked_latencies_add_up(link: FakeLink) -> None:
    first, second = make("latency", latency=30), make("latency", latency=50)
    first_state, second_state = first.new_state(None), second.new_state(None)

    async def through_second(chunk: Chunk) -> None:
        await second.pipe(link, second_state, chunk, link.emit)

    await first.pipe(link, first_state, Chunk(b"x", 0.0), through_second)
    assert link.data() == b"x"
    assert link.emitted[0][0] == pytest.approx(0.080)


async def test_interrupted_latency_releases_the_chunk_at_once(link: FakeLink) -> None:
    toxic = make("latency", latency=1000)
    state = toxic.new_state(None)
    link.interrupt_on_sleep = state  # the toxic is updated or removed while the chunk waits
    await toxic.pipe(link, state, Chunk(b"x", 0.0), link.emit)
    assert link.emitted == [(0.0, b"x")]


async def test_bandwidth_paces_bytes_at_the_rate(link: FakeLink) -> None:
    # rate is KB/s with 1 KB = 1000 bytes: 10 KB/s is 10 bytes per ms, released 100 ms at a time.
    await feed(link, make("bandwidth", rate=10), (0.0, b"x" * 5000))
    assert link.data() == b"x" * 5000
    assert [len(data) for _, data in link.emitted] == [1000] * 5
    assert [time for time, _ in link.emitted] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


async def test_bandwidth_counts_across_chunks(link: FakeLink) -> None:
    await feed(link, make("bandwidth", rate=1), (0.0, b"x" * 50), (0.0, b"y" * 50))
    assert link.data() == b"x" * 50 + b"y" * 50
    assert link.clock == pytest.approx(0.100)  # 100 bytes at 1 byte/ms


async def test_bandwidth_zero_is_no_limit(link: FakeLink) -> None:
    await feed(link, make("bandwidth", rate=0), (0.0, b"x" * 100_000))
    assert link.emitted == [(0.0, b"x" * 100_000)]


@pytest.mark.parametrize(("average", "variation"), [(10, 0), (10, 5), (1, 0), (100, 30)])
async def test_slicer_splits_into_average_sized_pieces_with_delay_between(
    link: FakeLink, average: int, variation: int
) -> None:
    random.seed(average * 31 + variation)
    data = bytes(range(256)) * 4
    await feed(
        link,
        make("slicer", average_size=average, size_variation=variation, delay=1000),
        (0.0, data),
    )
    sizes = [len(piece) for _, piece in link.emitted]
    assert link.data() == data  # nothing lost, nothing reordered
    assert len(sizes) > 1
    assert all(1 <= size <= average + variation for size in sizes), sizes
    assert link.sleeps == pytest.approx([0.001] * (len(sizes) - 1))  # `delay` is microseconds


async def test_slicer_small_chunk_is_left_whole(link: FakeLink) -> None:
    await feed(link, make("slicer", average_size=10, size_variation=5, delay=1000), (0.0, b"abc"))
    assert link.emitted == [(0.0, b"abc")]


async def test_limit_data_truncates_at_the_limit_then_closes(link: FakeLink) -> None:
    toxic = make("limit_data", bytes=10)
    state = toxic.new_state(None)
    for data in (b"aaaa", b"bbbb"):
        await toxic.pipe(link, state, Chunk(data, 0.0), link.emit)
    assert link.closed == 0  # under the limit the connection stays open
    await toxic.pipe(link, state, Chunk(b"cccc", 0.0), link.emit)
    assert link.data() == b"aaaabbbbcc"
    assert link.closed == 1


async def test_limit_data_count_survives_an_update(link: FakeLink) -> None:
    toxic = make("limit_data", bytes=6)
    state = toxic.new_state(None)
    await toxic.pipe(link, state, Chunk(b"abcd", 0.0), link.emit)
    state = toxic.new_state(state)  # the toxic was updated: Toxiproxy keeps the byte count
    await toxic.pipe(link, state, Chunk(b"efgh", 0.0), link.emit)
    assert link.data() == b"abcdef"
    assert link.closed == 1


async def test_timeout_drops_data_and_closes_after_timeout(link: FakeLink) -> None:
    await feed(link, make("timeout", timeout=250), (0.0, b"lost"))
    assert link.emitted == []
    assert [timer.delay_s for timer in link.timers] == [pytest.approx(0.250)]
    assert link.closed == 0
    link.fire_timers()
    assert link.closed == 1


async def test_timeout_zero_never_closes_but_removal_does(link: FakeLink) -> None:
    toxic = make("timeout", timeout=0)
    state = toxic.new_state(None)
    toxic.start(link, state)
    await toxic.pipe(link, state, Chunk(b"lost", 0.0), link.emit)
    assert link.emitted == [] and link.timers == [] and link.closed == 0
    toxic.stop(link, state, removed=False)  # an update does not close
    assert link.closed == 0
    toxic.stop(link, state, removed=True)  # data was dropped: removing the toxic closes the link
    assert link.closed == 1


async def test_reset_peer_resets_after_timeout_and_drops_data(link: FakeLink) -> None:
    await feed(link, make("reset_peer", timeout=100), (0.0, b"first"), (0.0, b"second"))
    assert link.emitted == []  # the peer never sees data before the reset
    assert [timer.delay_s for timer in link.timers] == [pytest.approx(0.100)]  # armed once
    assert link.resets == 0
    link.fire_timers()
    assert link.resets == 1 and link.closed == 0


async def test_reset_peer_fires_on_end_of_stream_too(link: FakeLink) -> None:
    toxic = make("reset_peer", timeout=0)
    state = toxic.new_state(None)
    await toxic.pipe_eof(link, state, link.emit_eof)
    assert link.eofs == []
    link.fire_timers()
    assert link.resets == 1


async def test_slow_close_delays_the_close(link: FakeLink) -> None:
    toxic = make("slow_close", delay=300)
    state = toxic.new_state(None)
    await toxic.pipe(link, state, Chunk(b"data", 0.0), link.emit)
    await toxic.pipe_eof(link, state, link.emit_eof)
    assert link.emitted == [(0.0, b"data")]  # data is not delayed
    assert link.eofs == [pytest.approx(0.300)]


@pytest.mark.parametrize("type_name", sorted(TOXIC_TYPES))
def test_toxicity_is_rolled_per_connection(type_name: str) -> None:
    random.seed(7)
    assert not any(make(type_name, toxicity=0.0).new_state(None).affected for _ in range(100))
    assert all(make(type_name, toxicity=1.0).new_state(None).affected for _ in range(100))
    half = [make(type_name, toxicity=0.5).new_state(None).affected for _ in range(400)]
    assert 120 < sum(half) < 280  # each connection rolls on its own


async def test_timeout_unaffected_connection_gets_no_timer(link: FakeLink) -> None:
    toxic = make("timeout", toxicity=0.0, timeout=100)
    state = toxic.new_state(None)
    toxic.start(link, state)
    toxic.stop(link, state, removed=True)
    assert link.timers == [] and link.closed == 0


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([50], [50]),  # smaller than the limit
        ([100], [100]),  # exactly the limit
        ([150], [100]),  # bigger: truncated
        ([25, 25, 25, 25], [25, 25, 25, 25]),  # several chunks adding up to the limit
        ([90, 20], [90, 10]),  # the second chunk would overflow
        ([100, 0], [100]),
    ],
)
async def test_limit_data_table(link: FakeLink, chunks: list[int], expected: list[int]) -> None:
    await feed(link, make("limit_data", bytes=100), *((0.0, b"z" * size) for size in chunks))
    assert [len(data) for _, data in link.emitted] == expected
    assert (link.closed > 0) == (sum(expected) == 100)  # closed once the limit is reached


async def test_limit_data_zero_passes_nothing(link: FakeLink) -> None:
    await feed(link, make("limit_data", bytes=0), (0.0, b"z" * 100))
    assert link.emitted == []
    assert link.closed == 1


async def test_slicer_on_a_large_read_makes_about_size_over_average_writes(link: FakeLink) -> None:
    random.seed(480)
    data = b"hello world " * 40_000  # 480 kB; average 1024 +/- 512 gives about 480 writes
    await feed(link, make("slicer", average_size=1024, size_variation=512, delay=10), (0.0, data))
    assert link.data() == data
    assert 480 // 2 <= len(link.emitted) <= 480 // 2 + 480


# The README's "Differences from Toxiproxy" for negative and zero attributes, pinned here.


async def test_negative_latency_means_no_delay(link: FakeLink) -> None:
    await feed(link, make("latency", latency=-50), (0.0, b"x"))
    assert link.emitted == [(0.0, b"x")]


async def test_negative_timeout_holds_forever_like_zero(link: FakeLink) -> None:
    await feed(link, make("timeout", timeout=-1), (0.0, b"lost"))
    assert link.emitted == [] and link.timers == [] and link.closed == 0


async def test_negative_limit_data_closes_at_the_first_data(link: FakeLink) -> None:
    await feed(link, make("limit_data", bytes=-5), (0.0, b"x"))
    assert link.emitted == [] and link.closed == 1


async def test_negative_bandwidth_is_no_limit(link: FakeLink) -> None:
    await feed(link, make("bandwidth", rate=-1), (0.0, b"x" * 1000))
    assert link.emitted == [(0.0, b"x" * 1000)]


@pytest.mark.parametrize("average", [0, -3])
async def test_slicer_non_positive_average_slices_single_bytes(
    link: FakeLink, average: int
) -> None:
    await feed(link, make("slicer", average_size=average, delay=0), (0.0, b"abcd"))
    assert [data for _, data in link.emitted] == [b"a", b"b", b"c", b"d"]


async def test_slicer_variation_bigger_than_the_chunk_keeps_every_byte(link: FakeLink) -> None:
    random.seed(3)
    await feed(link, make("slicer", average_size=2, size_variation=50, delay=0), (0.0, b"x" * 40))
    assert link.data() == b"x" * 40
    assert all(piece for _, piece in link.emitted)  # split points stay inside the chunk


async def test_removing_reset_peer_during_its_timeout_cancels_the_reset(link: FakeLink) -> None:
    toxic = make("reset_peer", timeout=100)
    state = toxic.new_state(None)
    await toxic.pipe(link, state, Chunk(b"x", 0.0), link.emit)
    state.interrupt()  # what the link does when the toxic is removed
    link.fire_timers()
    assert link.resets == 0
