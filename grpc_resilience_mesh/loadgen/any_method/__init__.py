"""Load on any gRPC method by its full name: resolve it (server reflection, a descriptor set or
.proto files), render every request from a JSON template, then run a bounded closed- or
open-loop load.

    info = await resolve_method("127.0.0.1:50051", "/kvexample.v1.KeyValue/Get")
    calls = render_requests(info, {"key": "k-{n}"}, {"x-tenant": "t{n}"}, 200)
    records = await run_load("127.0.0.1:50051", info, calls, LoadShape(200, 8, 1.0, 20.0))
"""

from grpc_resilience_mesh.loadgen.any_method.method import LoadInputError, MethodInfo
from grpc_resilience_mesh.loadgen.any_method.resolve import resolve_method
from grpc_resilience_mesh.loadgen.any_method.run import CallRecord, LoadShape, run_load
from grpc_resilience_mesh.loadgen.any_method.templating import Metadata, render_requests

__all__ = [
    "CallRecord",
    "LoadInputError",
    "LoadShape",
    "Metadata",
    "MethodInfo",
    "render_requests",
    "resolve_method",
    "run_load",
]
