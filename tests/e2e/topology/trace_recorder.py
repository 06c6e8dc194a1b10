"""A kv service for a topology run's trace test: it records the traceparent and baggage each
Put arrived with, and the code it answered, one JSON line per call in the file argv[1]. Past
the first argv[2] Puts (the steady state's) every third one fails UNAVAILABLE, so the fault
phase has failed calls whose traces the report must name.

    LISTEN_ADDR=127.0.0.1:50051 python -m tests.e2e.topology.trace_recorder OUT STEADY
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import IO

import grpc
import grpc.aio

from examples.kv import kv_pb2, kv_pb2_grpc


class RecordingKeyValue(kv_pb2_grpc.KeyValueServicer):
    def __init__(self, out: IO[str], steady: int) -> None:
        self.out, self.steady, self.puts = out, steady, 0

    async def Put(
        self, request: kv_pb2.PutRequest, context: grpc.aio.ServicerContext
    ) -> kv_pb2.PutResponse:
        self.puts += 1
        fails = self.puts > self.steady and self.puts % 3 == 0
        headers = dict(context.invocation_metadata() or ())
        line = {
            "key": request.key,
            "traceparent": headers.get("traceparent", ""),
            "baggage": headers.get("baggage", ""),
            "code": "UNAVAILABLE" if fails else "OK",
        }
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()
        if fails:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "recorder: every third call fails")
        return kv_pb2.PutResponse()


async def main(out_path: Path, steady: int) -> None:
    with out_path.open("a") as out:
        server = grpc.aio.server()
        kv_pb2_grpc.add_KeyValueServicer_to_server(RecordingKeyValue(out, steady), server)
        server.add_insecure_port(os.environ["LISTEN_ADDR"])
        await server.start()
        await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
