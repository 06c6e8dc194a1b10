"""Streams their clients cancel (issue 25, item 7): each used to log an ERROR with a traceback
in the gateway and in recommendation ("Failed to detach context" from the tracing layer, whose
stream was closed late in another context, and grpc's "ExecuteBatchError"): 100 cancels, 70
records and 66 KB. A cancelled stream now logs nothing above INFO, and no traceback."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import grpc.aio

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.hardening.inproc_services import serving
from tests.support.polling import await_until

KEY = "cancelled-streams-key"
CANCELS = 40
STREAM = "/mesh.v1.Gateway/StreamRecommendations"
RECOMMEND = "/mesh.v1.RecommendationService/StreamRecommend"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def recording() -> Iterator[Records]:
    handler = Records()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


async def cancel_streams(addr: str, n: int) -> None:
    """`n` streams, each cancelled at another point: before anything, or after some items."""
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        for i in range(n):
            call = stub.StreamRecommendations(
                gateway_pb2.GetHomeRequest(user_id=f"u-{i + 1:04d}", limit=50),
                metadata=(("authorization", f"Bearer {KEY}"),),
            )
            for _ in range(i % 3):
                await call.read()
            await asyncio.sleep(0.001 * (i % 4))
            call.cancel()


async def test_cancelled_streams_log_no_error_and_no_traceback(tmp_path: Path) -> None:
    env = {"MESH_API_KEYS": KEY, "MESH_TRACING": "1", "MESH_TRACES_DIR": str(tmp_path)}
    async with serving(env=env) as served:
        with recording() as seen:
            await cancel_streams(served.listen["gateway"], CANCELS)

            async def none_in_flight() -> bool:
                gateway = await served.metric("gateway", "mesh_server_in_flight", STREAM)
                behind = await served.metric("recommendation", "mesh_server_in_flight", RECOMMEND)
                return gateway == 0 and behind == 0

            await await_until(
                none_in_flight,
                timeout_s=10,
                what="no stream left in flight",
            )
            await asyncio.sleep(0.5)  # late finalisers, if any, would log by now
        records = list(seen.records)
        counted = await served.server_calls("gateway", STREAM)
    loud = [r for r in records if r.levelno >= logging.WARNING]
    tracebacks = [r for r in records if r.exc_info or "Traceback" in r.getMessage()]
    assert not loud, [(r.name, r.getMessage()[:120]) for r in loud[:5]]
    assert not tracebacks, [(r.name, r.getMessage()[:120]) for r in tracebacks[:5]]
    info = [
        r
        for r in records
        if r.levelno == logging.INFO and r.name != "grpc_resilience_mesh.services.runtime"
    ]
    assert len(info) <= CANCELS, len(info)
    assert set(counted) <= {"CANCELLED", "OK"}, counted  # a stream may end before its cancel
