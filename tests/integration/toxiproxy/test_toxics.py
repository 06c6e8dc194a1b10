"""Toxic behaviour on a real TCP echo server, timed, including changes to open connections."""

from __future__ import annotations

import socket
import time

import pytest
from toxiproxy_helpers import connect, listen_port, round_trip_ms

from chaos.toxiproxy.client import ToxiproxyClient

pytestmark = pytest.mark.timeout(20)
TOLERANCE_MS = 15


def median_rtt_ms(sock: socket.socket, samples: int = 3) -> float:
    return sorted(round_trip_ms(sock) for _ in range(samples))[samples // 2]


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
        base_ms = median_rtt_ms(sock)
        for index, (stream, latency_ms) in enumerate(toxics):
            client.add_toxic(
                "echo", "latency", stream, attributes={"latency": latency_ms}, name=f"lat{index}"
            )
        assert abs(median_rtt_ms(sock) - base_ms - expected_ms) <= TOLERANCE_MS


def test_latency_pipelines_instead_of_serialising(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "latency", attributes={"latency": 50})
    with connect(echo_proxy) as sock:
        start = time.perf_counter()
        for _ in range(10):
            sock.sendall(b"x" * 10)
            time.sleep(0.005)
        received = b""
        while len(received) < 100:
            received += sock.recv(1000)
        # Serialised delays would take 10 x 50 ms; pipelined ones about 50 + 10 x 5 ms.
        assert (time.perf_counter() - start) * 1000 < 200


def test_toxic_added_while_open_and_patched_and_removed(
    client: ToxiproxyClient, echo_proxy: int
) -> None:
    with connect(echo_proxy) as sock:
        base_ms = median_rtt_ms(sock)
        client.add_toxic("echo", "latency", attributes={"latency": 40})
        assert abs(median_rtt_ms(sock) - base_ms - 40) <= TOLERANCE_MS
        client.update_toxic("echo", "latency_downstream", attributes={"latency": 80})
        assert abs(median_rtt_ms(sock) - base_ms - 80) <= TOLERANCE_MS
        client.remove_toxic("echo", "latency_downstream")
        assert median_rtt_ms(sock) - base_ms <= TOLERANCE_MS


def test_toxicity_zero_leaves_connections_alone(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "latency", toxicity=0.0, attributes={"latency": 200})
    with connect(echo_proxy) as sock:
        assert median_rtt_ms(sock) < 100
        client.update_toxic("echo", "latency_downstream", toxicity=1.0)
        assert median_rtt_ms(sock) >= 200 - TOLERANCE_MS


def test_reset_peer_sends_rst(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "reset_peer", attributes={"timeout": 0})
    with connect(echo_proxy) as sock:
        sock.sendall(b"hello")
        with pytest.raises(ConnectionResetError):
            for _ in range(10):
                sock.recv(100)
                time.sleep(0.05)


def test_reset_peer_waits_for_its_timeout(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "reset_peer", "upstream", attributes={"timeout": 100})
    with connect(echo_proxy) as sock:
        start = time.perf_counter()
        sock.sendall(b"hello")
        with pytest.raises(ConnectionResetError):
            sock.recv(100)
        assert abs((time.perf_counter() - start) * 1000 - 100) <= 30


def test_timeout_closes_after_timeout(client: ToxiproxyClient, echo_proxy: int) -> None:
    client.add_toxic("echo", "timeout", attributes={"timeout": 100})
    with connect(echo_proxy) as sock:
        start = time.perf_counter()
        sock.sendall(b"dropped")
        assert sock.recv(100) == b""
        assert abs((time.perf_counter() - start) * 1000 - 100) <= 30


def test_timeout_zero_holds_until_removed_then_closes(
    client: ToxiproxyClient, echo_proxy: int
) -> None:
    client.add_toxic("echo", "timeout", attributes={"timeout": 0})
    with connect(echo_proxy) as sock:
        sock.sendall(b"held")
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(100)
        sock.settimeout(3)
        # As in Toxiproxy, removing a timeout toxic closes the connections it held.
        client.remove_toxic("echo", "timeout_downstream")
        assert sock.recv(100) == b""
    with connect(echo_proxy) as sock:
        assert round_trip_ms(sock) < 100


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
    try:
        with connect(port) as sock:
            accepted, _ = listener.accept()
            start = time.perf_counter()
            accepted.close()
            assert sock.recv(100) == b""
            assert abs((time.perf_counter() - start) * 1000 - 150) <= 30
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
