"""`mesh bench proxy` measures direct, embedded and real Toxiproxy in one run."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.bench.proxy import format_proxy_bench, run_proxy_bench
from tests.support.peers import peer_binary

pytestmark = pytest.mark.timeout(60)


async def test_one_run_measures_both_servers_side_by_side() -> None:
    peer_binary("toxiproxy-server")
    result = await run_proxy_bench(calls=100, concurrency=8, rounds=1, real=True)
    assert list(result["variants"]) == ["direct", "proxied", "real"]
    for row in result["variants"].values():
        assert row["throughput"] > 0 and 0 < row["p50_ms"] <= row["p99_ms"]
    assert "real" in format_proxy_bench(result)
