"""Tracing: the spans of every RPC, and the two ways they are recorded behind one seam.

Read in this order:
- `spans.py`, the design: which spans an RPC makes (gRFC A72's shape), with W3C trace context
  in gRPC metadata. A SERVER span per call received (`Recv.<svc>.<Method>`, continuing the
  caller's traceparent), an INTERNAL span per logical outbound call (`Sent.`, where the
  strategies' events land, `span_events.py`), a CLIENT span per attempt (`Attempt.`, whose
  traceparent goes on the wire). These are the spans the telemetry tests check.
- `seam.py`: `SpanRecorder`, the four calls spans.py makes a span through (start, start a
  child, start a server span from the caller's headers, the ids for the wire); `choice.py`
  picks the recorder once, when a service sets up tracing.
- `sdk.py`: the OpenTelemetry SDK behind the seam. Always correct, for any exporter, sampler
  or processor; one SDK span costs 10-18 us before any export.
- `light.py` (the optimisation): the same spans as plain slots and a dict, handed when they end
  to the JSON-lines processor, which encodes them in batches (`jsonl_exporter.py`,
  `span_json.py`: the same line an SDK span would give). It stands in for the SDK only while
  the provider just writes JSON lines (or nothing) with the default sampler, and goes to the
  SDK recorder otherwise; tests/unit/telemetry/test_light_spans.py holds it to the SDK's output.
- `setup.py`: the provider, its exporter (chosen from the environment) and what serve() mounts.
"""

from grpc_resilience_mesh.services.telemetry.tracing.setup import (
    TRACER_NAME,
    MeshTracing,
    choose_exporter,
    server_tracing,
    setup_tracing,
)
from grpc_resilience_mesh.services.telemetry.tracing_env import otlp_endpoint

__all__ = [
    "TRACER_NAME",
    "MeshTracing",
    "choose_exporter",
    "otlp_endpoint",
    "server_tracing",
    "setup_tracing",
]
