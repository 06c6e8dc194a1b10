"""Metadata that is not UTF-8, sent without a key: every call is refused UNAUTHENTICATED and the
log gets at most one short line per interval, not a traceback per call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from grpc_resilience_mesh.services.runtime.log_limit import (
    GRPC_LOGGER,
    INVALID_ENCODING_MSG,
    InvalidMetadataLogLimit,
)
from grpc_resilience_mesh.services.v1 import gateway_pb2
from tests.integration.hardening.inproc_services import serving
from tests.integration.hardening.raw_h2 import unary_call

CALLS = 200
UNAUTHENTICATED = b"16"
GARBAGE = [(b"authorization", b"Bearer \xff\xfe\xc3\x28not-utf8")]


class Lines(logging.Handler):
    """Every record that reaches the root logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    yield handler
    logging.getLogger().removeHandler(handler)


async def test_non_utf8_authorization_is_refused_and_logged_once(lines: Lines) -> None:
    request = gateway_pb2.GetHomeRequest(user_id="u-0001").SerializeToString()
    async with serving(("gateway",), env={"MESH_API_KEYS": "garbage-test-key"}) as served:
        logging.getLogger().addHandler(lines)  # after serve() set up its own handlers
        statuses = []
        for _batch in range(CALLS // 20):
            statuses += await asyncio.gather(
                *(
                    unary_call(
                        served.listen["gateway"], "/mesh.v1.Gateway/GetHome", request, GARBAGE
                    )
                    for _ in range(20)
                )
            )
        logging.getLogger().removeHandler(lines)
    assert [s.get(b"grpc-status") for s in statuses] == [UNAUTHENTICATED] * CALLS
    noisy = [r for r in lines.records if r.levelno >= logging.WARNING]
    assert len(noisy) <= 2, [r.getMessage()[:120] for r in noisy[:5]]
    assert all(r.exc_info is None for r in lines.records)
    assert not any("\\xff" in r.getMessage() for r in lines.records)


def _record() -> logging.LogRecord:
    return logging.LogRecord(
        GRPC_LOGGER, logging.ERROR, "x.pyx", 1, INVALID_ENCODING_MSG, (b"\xff",), None
    )


def test_one_line_per_interval_saying_how_many_were_held_back() -> None:
    now = [100.0]
    limit = InvalidMetadataLogLimit(interval_s=60.0, clock=lambda: now[0])
    first = _record()
    assert limit.filter(first)
    assert first.levelno == logging.WARNING and first.exc_info is None
    assert [limit.filter(_record()) for _ in range(50)] == [False] * 50
    now[0] += 59.9
    assert not limit.filter(_record())
    now[0] += 0.2
    later = _record()
    assert limit.filter(later)
    assert "51 held back" in later.getMessage()
    other = logging.LogRecord(GRPC_LOGGER, logging.ERROR, "x", 1, "something else", (), None)
    assert limit.filter(other) and other.levelno == logging.ERROR
