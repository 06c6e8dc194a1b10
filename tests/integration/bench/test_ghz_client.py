"""ghz (built by `make peers`) as `mesh bench mesh --client ghz` drives it: GetHome on a real
grpc.aio server, the calls and calls in flight asked, on one connection, the API key from its
metadata file, and what it measured read back."""

from __future__ import annotations

import asyncio
from functools import partial

import grpc
import grpc.aio

from grpc_resilience_mesh.bench.ghz import GhzError, ghz_window
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.resilience.servers import serving
from tests.support.peers import peer_binary


class Home(gateway_pb2_grpc.GatewayServicer):
    """Counts GetHome calls, their peak in flight, and refuses a call without the key."""

    def __init__(self) -> None:
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self.peers: set[str] = set()

    async def GetHome(
        self, request: gateway_pb2.GetHomeRequest, context: grpc.aio.ServicerContext
    ) -> gateway_pb2.GetHomeResponse:
        if ("authorization", "Bearer k-123") not in tuple(context.invocation_metadata() or ()):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "no key")
        self.calls += 1
        self.peers.add(context.peer())
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.005)
        self.in_flight -= 1
        return gateway_pb2.GetHomeResponse()


async def test_ghz_sends_the_calls_asked_with_the_key_and_reports_them() -> None:
    peer_binary("ghz")
    home = Home()
    async with serving(partial(gateway_pb2_grpc.add_GatewayServicer_to_server, home)) as target:
        window = await asyncio.to_thread(
            partial(ghz_window, target, requests=120, concurrency=8, warmup=20, api_key="k-123")
        )
    assert home.calls == 140  # the warm-up's and the measured run's
    assert home.peak == 8
    assert len(home.peers) == 2  # one connection per run (warm-up, then measured)
    assert window.requests == 120 and window.codes == {"OK": 120}
    assert 0 < window.p50_ms <= window.p99_ms
    assert window.rps > 0 and window.cpu_s > 0


async def test_calls_that_fail_under_ghz_fail_the_window() -> None:
    peer_binary("ghz")
    home = Home()
    async with serving(partial(gateway_pb2_grpc.add_GatewayServicer_to_server, home)) as target:
        try:
            await asyncio.to_thread(
                partial(ghz_window, target, requests=10, concurrency=2, warmup=0, api_key="wrong")
            )
        except GhzError as err:
            assert "Unauthenticated" in str(err) or "UNAUTHENTICATED" in str(err)
        else:
            raise AssertionError("a window of refused calls was measured")
