"""Which `SpanRecorder` a service's spans go through, chosen once when it sets up tracing."""

from __future__ import annotations

from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.sdk.trace import Tracer as SdkTracer

from grpc_resilience_mesh.services.telemetry.tracing.light import LightTracer
from grpc_resilience_mesh.services.telemetry.tracing.sdk import SdkRecorder
from grpc_resilience_mesh.services.telemetry.tracing.seam import SpanRecorder


def recorder_for(
    tracer: trace.Tracer, propagator: TextMapPropagator | None = None, w3c_only: bool = True
) -> SpanRecorder:
    """Chosen once, when a service sets up tracing: the light recorder for an SDK tracer whose
    spans all go through its provider's processor list (the SDK's default provider), which it
    can stand in for; the SDK recorder for anything else."""
    sdk = SdkRecorder(tracer, propagator or propagate.get_global_textmap(), w3c_only)
    active = getattr(tracer, "span_processor", None)
    if type(tracer) is SdkTracer and isinstance(getattr(active, "_span_processors", None), tuple):
        return LightTracer(tracer, sdk, w3c_only)
    return sdk
