"""Toxic behaviour on a real TCP echo server, timed, including changes to open connections.

Timing rule for these tests: scheduling noise on a loaded machine only ever adds delay, so every
sample must respect the lower bound (a toxic never fires early), while the upper bound is checked
on the fastest of several samples (one stall cannot inflate all of them).
"""

from __future__ import annotations

import socket
import time

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    BOTH_SERVERS,
    ApiServer,
    EchoServer,
    connect,
    listen_port,
    round_trip_ms,
)
from tests.support.polling import wait_until

pytestmark = [pytest.mark.timeout(30), BOTH_SERVERS]
EARLY_MS = 5  # clock granularity: how much sooner than asked a timer may appear to fire
LATE_MS = 40  # how much later than asked the fastest sample may be


def reset_by_peer(sock: socket.socket) -> bool:
    """One read: True once it fails with an RST; data or an orderly close are not a reset."""
    try:
        sock.recv(100)
    except ConnectionResetError:
        return True
    return False


def fastest_rtt_ms(sock: socket.socket, samples: int = 5) -> float:
    return min(round_trip_ms(sock) for _ in range(samples))


def assert_delay(samples_ms: list[float], expected_ms: float) -> None:
    assert min(samples_ms) >= expected_ms - EARLY_MS, samples_ms
    assert min(samples_ms) <= expected_ms + LATE_MS, samples_ms


@pytest.mark.parametrize(
    ("toxics", "expected_ms"),
    [
        ([("downstream", 50)], 50),
        ([("upstream", 50)], 50),
        ([("upstream", 30), ("downstream", 40)], 70),
        ([("downstream", 30), ("downstream", 40)], 70),
    ],
    ids=["downstream", "upstream", "both", "stacked"],
)
def test_latency(
    client: ToxiproxyClient, echo_proxy: int, toxics: list[tuple[str, int]], expected_ms: int
) -> None:
    with connect(echo_proxy) as sock:
        base_ms = fastest_rtt_ms(sock)
        for index, (stream, latency_ms) in enumerate(toxics):
            client.add_toxic(
                "echo", "latency", stream, attributes={"latency": latency_ms}, name=f"lat{index}"
            )
        samples = [round_trip_ms(sock) for _ in range(5)]
        assert min(samples) >= expected_ms - EARLY_MS, samples
        assert min(samples) - base_ms <= expected_ms + LATE_MS, samples


def test_latency_pipelines_instead_of_serialising(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "latency", attributes={"latency": 50})
    with connect(echo_proxy) as sock:
        start = time.perf_counter()
        for _ in range(20):
            sock.sendall(b"x" * 10)
            time.sleep(0.005)
        received = b""
        while len(received) < 200:
            received += sock.recv(1000)
        # Serialised delays would take 20 x 50 = 1000 ms; pipelined ones about 50 + 20 x 5 ms.
        assert (time.perf_counter() - start) * 1000 < 600


def test_toxic_added_while_open_and_patched_and_removed(
    client: ToxiproxyClient, echo_proxy: int
) -> None:
    with connect(echo_proxy) as sock:
        base_ms = fastest_rtt_ms(sock)
        client.add_toxic("echo", "latency", attributes={"latency": 40})
        assert_delay([round_trip_ms(sock) - base_ms for _ in range(5)], 40)
        client.update_toxic("echo", "latency_downstream", attributes={"latency": 80})
        assert_delay([round_trip_ms(sock) - base_ms for _ in range(5)], 80)
        client.remove_toxic("echo", "latency_downstream")
        assert fastest_rtt_ms(sock) - base_ms <= LATE_MS


def test_toxicity_zero_leaves_connections_alone(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "latency", toxicity=0.0, attributes={"latency": 200})
    with connect(echo_proxy) as sock:
        assert fastest_rtt_ms(sock) < 100
        client.update_toxic("echo", "latency_downstream", toxicity=1.0)
        assert round_trip_ms(sock) >= 200 - EARLY_MS


def test_reset_peer_sends_rst(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "reset_peer", attributes={"timeout": 0})
    with connect(echo_proxy) as sock:
        sock.sendall(b"hello")
        wait_until(lambda: reset_by_peer(sock), timeout_s=3, what="connection reset by peer")


def test_reset_peer_waits_for_its_timeout(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "reset_peer", "upstream", attributes={"timeout": 100})
    samples = []
    for _ in range(3):
        # The clock starts on the proxy when the link starts, which is after connect() returns.
        start = time.perf_counter()
        with connect(echo_proxy) as sock:
            sock.sendall(b"hello")
            with pytest.raises(ConnectionResetError):
                sock.recv(100)
        samples.append((time.perf_counter() - start) * 1000)
    assert_delay(samples, 100)


def test_timeout_closes_after_timeout(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "timeout", attributes={"timeout": 100})
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        with connect(echo_proxy) as sock:
            sock.sendall(b"dropped")
            assert sock.recv(100) == b""
        samples.append((time.perf_counter() - start) * 1000)
    assert_delay(samples, 100)


def test_timeout_zero_holds_until_removed_then_closes(
    client: ToxiproxyClient, echo_server: EchoServer, echo_proxy: int
) -> None:
    client.add_toxic("echo", "timeout", attributes={"timeout": 0})
    with connect(echo_proxy) as sock:
        sock.sendall(b"held")
        # The echo has been sent back to the proxy: from here only the toxic stands in its way.
        wait_until(lambda: echo_server.echoed_bytes >= 4, timeout_s=3, what="echo sent upstream")
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(100)
        sock.settimeout(3)
        # As in Toxiproxy, removing a timeout toxic closes the connections it held.
        client.remove_toxic("echo", "timeout_downstream")
        assert sock.recv(100) == b""
    with connect(echo_proxy) as sock:
        assert fastest_rtt_ms(sock) < 100


def test_limit_data_closes_after_n_bytes(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "limit_data", attributes={"bytes": 10})
    with connect(echo_proxy) as sock:
        sock.sendall(b"0123456789abcdef")
        received = b""
        while data := sock.recv(100):
            received += data
        assert received == b"0123456789"


def test_bandwidth_bounds_throughput(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "bandwidth", attributes={"rate": 100})
    payload = b"x" * 30_000
    with connect(echo_proxy) as sock:
        start = time.perf_counter()
        sock.sendall(payload)
        received = 0
        while received < len(payload):
            received += len(sock.recv(65536))
        # 30 KB at 100 KB/s is 300 ms; without the toxic it takes about a millisecond.
        assert 0.2 <= time.perf_counter() - start <= 1.0


def test_slicer_splits_data(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "slicer", attributes={"average_size": 10, "delay": 20_000})
    with connect(echo_proxy) as sock:
        sock.sendall(b"x" * 100)
        first = sock.recv(1000)
        assert 0 < len(first) < 100
        received = len(first)
        while received < 100:
            received += len(sock.recv(1000))


def test_slow_close_delays_close(client: ToxiproxyClient, echo_port: int) -> None:
    # Close comes from the upstream side: a server that hangs up right away.
    listener = socket.create_server(("127.0.0.1", 0))
    upstream = f"127.0.0.1:{listener.getsockname()[1]}"
    port = listen_port(client.create_proxy("closer", "127.0.0.1:0", upstream))
    client.add_toxic("closer", "slow_close", attributes={"delay": 150})
    samples = []
    try:
        for _ in range(3):
            with connect(port) as sock:
                accepted, _ = listener.accept()
                start = time.perf_counter()
                accepted.close()
                assert sock.recv(100) == b""
                samples.append((time.perf_counter() - start) * 1000)
        assert_delay(samples, 150)
    finally:
        listener.close()


def test_disable_refuses_and_enable_restores_same_port(
    client: ToxiproxyClient, echo_proxy: int
) -> None:
    with connect(echo_proxy) as sock:
        round_trip_ms(sock)
        client.disable("echo")
        assert sock.recv(100) == b""
    with pytest.raises(ConnectionRefusedError):
        connect(echo_proxy)
    assert listen_port(client.enable("echo")) == echo_proxy
    with connect(echo_proxy) as sock:
        round_trip_ms(sock)


def test_jitter_spreads_latency_within_its_bounds(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "latency", attributes={"latency": 60, "jitter": 40})
    with connect(echo_proxy) as sock:
        samples = [round_trip_ms(sock) for _ in range(10)]
    # 60 +/- 40 ms: never below 20; ten uniform draws spanning under 10 ms is a one-in-a-million.
    assert min(samples) >= 20 - EARLY_MS, samples
    assert min(samples) <= 60 + LATE_MS, samples
    assert max(samples) - min(samples) >= 10, samples


def test_toxicity_is_a_share_of_connections(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "latency", toxicity=0.5, attributes={"latency": 150})
    delayed = 0
    for _ in range(30):
        with connect(echo_proxy) as sock:
            delayed += round_trip_ms(sock) >= 150 - EARLY_MS
    # Binomial(30, 0.5) falls outside 5..25 about once in 30,000 runs.
    assert 5 <= delayed <= 25, delayed


def slices(sizes: list[int], expected: list[int]) -> bool:
    """True when each read is one or more consecutive expected slices (a slow reader merges)."""
    pending = list(expected)
    for size in sizes:
        total = 0
        while total < size and pending:
            total += pending.pop(0)
        if total != size:
            return False
    return not pending


def test_slicer_chunk_sizes(client: ToxiproxyClient) -> None:
    # One send of 100 bytes from the upstream; both servers halve it down to 6- and 7-byte slices.
    listener = socket.create_server(("127.0.0.1", 0))
    upstream = f"127.0.0.1:{listener.getsockname()[1]}"
    port = listen_port(client.create_proxy("sliced", "127.0.0.1:0", upstream))
    client.add_toxic("sliced", "slicer", attributes={"average_size": 10, "delay": 30_000})
    try:
        with connect(port) as sock:
            accepted, _ = listener.accept()
            with accepted:
                accepted.sendall(bytes(100))
                sizes: list[int] = []
                while sum(sizes) < 100:
                    sizes.append(len(sock.recv(1000)))
    finally:
        listener.close()
    assert slices(sizes, [6, 6, 6, 7] * 4), sizes
    assert len(sizes) >= 4, sizes  # slices arrive apart (a stalled reader may merge a few)


def test_bandwidth_added_to_an_open_connection_and_removed(
    client: ToxiproxyClient, echo_proxy: int
) -> None:
    payload = b"x" * 20_000

    def transfer_s(sock: socket.socket) -> float:
        start = time.perf_counter()
        sock.sendall(payload)
        received = 0
        while received < len(payload):
            received += len(sock.recv(65536))
        return time.perf_counter() - start

    with connect(echo_proxy) as sock:
        transfer_s(sock)
        client.add_toxic("echo", "bandwidth", attributes={"rate": 20})
        # 20 KB at 20 KB/s: a second at least (the rate is what the toxic is for); without it,
        # a millisecond or so, so half a second is a generous bound on a loaded machine.
        assert transfer_s(sock) >= 0.9
        client.remove_toxic("echo", "bandwidth_downstream")
        assert transfer_s(sock) < 0.5


def test_reset_peer_added_to_an_open_connection(
    toxiproxy: ApiServer, client: ToxiproxyClient, echo_proxy: int
) -> None:
    with connect(echo_proxy) as sock:
        round_trip_ms(sock)
        client.add_toxic("echo", "reset_peer", attributes={"timeout": 0})
        sock.sendall(b"hello")
        if toxiproxy.real:
            # Listed difference: Toxiproxy sets SO_LINGER 0 only on connections opened while the
            # toxic exists, so this one ends with a FIN; ours always resets.
            sock.settimeout(3)
            assert sock.recv(100) in (b"", b"hello")
        else:
            wait_until(lambda: reset_by_peer(sock), timeout_s=3, what="connection reset by peer")
