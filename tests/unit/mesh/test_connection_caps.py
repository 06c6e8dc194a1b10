"""Connection caps: the defaults and their bounds, the descriptor limit they fit in, and the
watch that says when a port is full (grpc core refuses the next connections without a word)."""

from __future__ import annotations

import logging
import resource
from pathlib import Path

import pytest

from grpc_resilience_mesh.services.runtime.config import ConfigError, ServiceConfig
from grpc_resilience_mesh.services.runtime.connections import (
    DESCRIPTOR_RESERVE,
    ConnectionWatch,
    ConnectionWatches,
    connection_cap,
    connection_options,
    established,
    established_on,
    open_descriptors,
    raise_descriptor_limit,
)


def test_caps_and_timeout_have_documented_defaults() -> None:
    cfg = ServiceConfig.from_env("gateway", {})
    assert (cfg.max_connections, cfg.admin_max_connections) == (4096, 64)
    assert cfg.handshake_timeout_s == 5.0
    assert cfg.settings_ack_timeout_s == 5.0  # the gateway's clients come from outside
    assert ServiceConfig.from_env("payment", {}).settings_ack_timeout_s == 60.0
    assert (
        ServiceConfig.from_env("payment", {"SETTINGS_ACK_TIMEOUT_S": "2"}).settings_ack_timeout_s
        == 2
    )
    options = dict(connection_options(cfg.max_connections, 5.0, 60.0))
    assert options == {
        "grpc.max_allowed_incoming_connections": 4096,
        "grpc.server_handshake_timeout_ms": 5000,
        "grpc.http2.settings_timeout": 60000,
    }


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"MAX_CONNECTIONS": "0"}, "MAX_CONNECTIONS"),
        ({"MAX_CONNECTIONS": "many"}, "MAX_CONNECTIONS"),
        ({"ADMIN_MAX_CONNECTIONS": "-5"}, "ADMIN_MAX_CONNECTIONS"),
        ({"HANDSHAKE_TIMEOUT_S": "0"}, "HANDSHAKE_TIMEOUT_S"),
        ({"HANDSHAKE_TIMEOUT_S": "inf"}, "HANDSHAKE_TIMEOUT_S"),
        ({"HANDSHAKE_TIMEOUT_S": "121"}, "HANDSHAKE_TIMEOUT_S"),
        ({"SETTINGS_ACK_TIMEOUT_S": "0"}, "SETTINGS_ACK_TIMEOUT_S"),
        ({"SETTINGS_ACK_TIMEOUT_S": "nan"}, "SETTINGS_ACK_TIMEOUT_S"),
    ],
)
def test_bad_caps_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{var}="):
        ServiceConfig.from_env("profile", env)


def test_the_cap_leaves_room_for_the_service_own_descriptors() -> None:
    assert connection_cap(4096, 1_048_576) == 4096
    assert connection_cap(4096, 1024) == 1024 - DESCRIPTOR_RESERVE
    assert connection_cap(4096, resource.RLIM_INFINITY) == 4096
    assert connection_cap(10, 100) == 1


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(hard, 256) if hard != resource.RLIM_INFINITY else 256
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        before, after = raise_descriptor_limit()
        assert before == low
        assert after == (hard if hard != resource.RLIM_INFINITY else low)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == after
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


TABLE = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid
   0: 0100007F:C351 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000
   1: 0100007F:C351 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000
   2: 0100007F:C351 0100007F:D432 01 00000000:00000000 00:00000000 00000000  1000
   3: 0100007F:C351 0100007F:D433 06 00000000:00000000 00:00000000 00000000  1000
   4: 0100007F:D431 0100007F:C351 01 00000000:00000000 00:00000000 00000000  1000
"""


def test_established_counts_the_port_accepted_connections_only(tmp_path: Path) -> None:
    (tmp_path / "tcp").write_text(TABLE)  # port 0xC351 = 50001: listening, 2 in, 1 closing
    assert established(50001, [tmp_path / "tcp", tmp_path / "absent"]) == 2
    assert established(50001, [tmp_path / "absent"]) is None


def test_the_watch_logs_once_when_full_and_once_when_there_is_room(
    caplog: pytest.LogCaptureFixture,
) -> None:
    held = iter([3, 5, 7, 5, 4, 6])
    watch = ConnectionWatch("MAX_CONNECTIONS", 50001, cap=5, count=lambda _port: next(held))
    with caplog.at_level(logging.INFO, logger="grpc_resilience_mesh.services.runtime"):
        for _ in range(6):
            watch.check()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("WARNING", "connections at the cap: new ones are refused"),
        ("INFO", "connections below the cap again"),
        ("WARNING", "connections at the cap: new ones are refused"),
    ]
    assert caplog.records[0].cap == "MAX_CONNECTIONS=5"  # type: ignore[attr-defined]


def test_one_reading_counts_every_port(tmp_path: Path) -> None:
    (tmp_path / "tcp").write_text(TABLE)  # 50001 = 0xC351 (2 in), 54321 = 0xD431 (1 out)
    assert established_on((50001, 54321, 9), [tmp_path / "tcp"]) == {50001: 2, 54321: 1, 9: 0}
    assert established_on((50001,), [tmp_path / "absent"]) is None


def test_the_watches_read_the_tables_only_when_a_cap_could_be_reached(
    caplog: pytest.LogCaptureFixture,
) -> None:
    readings: list[list[int]] = []
    held = {50001: 7, 50002: 1}

    def count(ports: object) -> dict[int, int]:
        readings.append(sorted(ports))  # type: ignore[call-overload]
        return {p: held[p] for p in ports}  # type: ignore[attr-defined]

    descriptors = iter([4, 6, 12, 12, 4])
    watches = ConnectionWatches(
        [
            ConnectionWatch("MAX_CONNECTIONS", 50001, cap=5),
            ConnectionWatch("ADMIN_MAX_CONNECTIONS", 50002, cap=10),
        ],
        count=count,
        descriptors=lambda: next(descriptors),
    )
    with caplog.at_level(logging.INFO, logger="grpc_resilience_mesh.services.runtime"):
        watches.check()  # 4 descriptors: below both caps, nothing read
        watches.check()  # 6: the public port could be full (it is: 7 >= 5)
        held[50001] = 3
        watches.check()  # 12: both could be; one reading for both
        held[50001] = 6
        watches.check()
        held[50001] = 2
        watches.check()  # 4 descriptors, but the public port was full: read to see it free
    assert readings == [[50001], [50001, 50002], [50001, 50002], [50001]]
    assert [r.getMessage() for r in caplog.records] == [
        "connections at the cap: new ones are refused",
        "connections below the cap again",
        "connections at the cap: new ones are refused",
        "connections below the cap again",
    ]


def test_without_a_descriptor_count_the_tables_are_read(tmp_path: Path) -> None:
    readings: list[object] = []

    def count(ports: object) -> None:
        readings.append(ports)

    watches = ConnectionWatches(
        [ConnectionWatch("MAX_CONNECTIONS", 50001, cap=5)], count=count, descriptors=lambda: None
    )
    watches.check()
    assert readings == [[50001]]
    for name in ("0", "1", "2"):
        (tmp_path / name).touch()
    assert open_descriptors(tmp_path) == 3
    assert open_descriptors(tmp_path / "absent") is None
