"""grpc_resilience_mesh.bench.layers: a figure for every server layer and every strategy of the full
policy, and the pipeline orders left as they were (the bench leaves one strategy out at a time)."""

from __future__ import annotations

import asyncio
import math

from grpc_aio_resilience import pipeline as pipelines
from grpc_resilience_mesh.bench.layers import run_layers_bench


def test_every_layer_and_strategy_gets_a_figure_and_the_orders_stay() -> None:
    orders = dict(pipelines.ORDERS)
    result = asyncio.run(run_layers_bench(calls=20, repeats=1, freeze=False))
    assert pipelines.ORDERS == orders
    server = result["server_us_per_call"]
    assert list(server) == [
        "servicer alone",
        "StreamGuard",
        "RequestDecodingInterceptor",
        "FateLayer",
        "InboundInterceptor",
        "SheddingInterceptor",
        "FaultInterceptor",
        "chain: handler lookup",
        "chain: every layer",
    ]
    client = result["client_us_per_call"]
    # every strategy the full policy puts on this edge, in the declared order (hedging is off)
    on_edge = [name for name in pipelines.PIPELINE_ORDER if name != "hedging"]
    assert list(client) == ["edge: interceptor and pipeline", *on_edge]
    assert all(math.isfinite(us) for us in (*server.values(), *client.values()))
    assert server["chain: handler lookup"] > 0 and client["edge: interceptor and pipeline"] > 0
