"""Each call of an any-method load reaches the server with the traceparent its record names:
a fresh trace per call, or the one the load's metadata set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc.aio

from grpc_resilience_mesh.loadgen.any_method import (
    LoadShape,
    render_requests,
    resolve_method,
    run_load,
)
from tests.integration.loadgen.any_method_servers import Counter, counter_serving

ECHO = "/loadtest.v1.Counter/Echo"
COUNT = "/loadtest.v1.Counter/Count"


@dataclass
class TraceCounter(Counter):
    """The Counter service, keeping each request's tag and the traceparent it arrived with."""

    traceparents: dict[str, str] = field(default_factory=dict)

    def saw(self, request: Any, context: grpc.aio.ServicerContext) -> None:
        super().saw(request, context)
        headers = dict(context.invocation_metadata() or ())
        self.traceparents[request.tag] = headers.get("traceparent", "")


async def test_every_call_carries_the_fresh_trace_its_record_names() -> None:
    counter = TraceCounter()
    async with counter_serving(counter) as target:
        info = await resolve_method(target, ECHO)
        calls = render_requests(info, {"tag": "r{n}"}, {}, 12)
        records = await run_load(target, info, calls, LoadShape(12, 3, 2.0, 10.0))
        stream = await resolve_method(target, COUNT)
        streamed = await run_load(
            target,
            stream,
            render_requests(stream, {"n": 2, "tag": "s"}, {}, 1),
            LoadShape(1, 1, 2.0, 10.0),
        )
    received = {tag: value.split("-")[1] for tag, value in counter.traceparents.items()}
    assert received == {**{f"r{r.index}": r.trace_id for r in records}, "s": streamed[0].trace_id}
    assert len(set(received.values())) == 13
    assert all(v.endswith("-01") for v in counter.traceparents.values())  # sampled


async def test_a_traceparent_set_in_the_load_s_metadata_is_sent_as_it_is() -> None:
    theirs = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
    counter = TraceCounter()
    async with counter_serving(counter) as target:
        info = await resolve_method(target, ECHO)
        calls = render_requests(info, {"tag": "r{n}"}, {"traceparent": theirs}, 3)
        records = await run_load(target, info, calls, LoadShape(3, 1, 2.0, 10.0))
    assert counter.traceparents == {f"r{i}": theirs for i in range(3)}
    assert {r.trace_id for r in records} == {"4bf92f3577b34da6a3ce929d0e0e4736"}
