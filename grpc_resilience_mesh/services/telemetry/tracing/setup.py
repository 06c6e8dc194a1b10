"""OpenTelemetry tracing for one service: the provider, its exporter, and the pieces serve() mounts.

Exporter choice (first that applies):
- `MESH_TRACING=0` (or `OTEL_SDK_DISABLED=true`): no tracing at all;
- `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` (e.g.
  http://127.0.0.1:4317): OTLP over gRPC behind a BatchSpanProcessor;
- `MESH_TRACES_DIR`: JSON lines in `<dir>/<service>.jsonl` (what `mesh traces` reads),
  encoded as each span ends and written by a thread (jsonl_exporter.JsonLinesSpanProcessor);
  a file rotates past `MESH_TRACES_MAX_BYTES` (default 64 MiB) keeping `MESH_TRACES_BACKUPS`
  generations (default 1, `<service>.jsonl.1`);
- none of these: spans are still made (ids propagate, logs carry them) but not exported.
Other standard variables (OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS,
OTEL_RESOURCE_ATTRIBUTES, OTEL_PROPAGATORS) are read by the SDK itself.

Each service gets its own provider (never the global one), so several services can share a
process, as they do in the integration tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from grpc_aio_resilience import AttemptObserver, Listener, ServerLayer
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import (
    DEFAULT_BACKUPS,
    DEFAULT_DELAY_S,
    DEFAULT_MAX_BYTES,
    JsonLinesSpanExporter,
    JsonLinesSpanProcessor,
)
from grpc_resilience_mesh.services.telemetry.tracing.public import PublicTracingInterceptor
from grpc_resilience_mesh.services.telemetry.tracing.span_events import tracing_listener
from grpc_resilience_mesh.services.telemetry.tracing.spans import (
    SpanFactory,
    TracingServerInterceptor,
)
from grpc_resilience_mesh.services.telemetry.tracing_env import (
    ENDPOINT,
    EXPORTER,
    SDK_DISABLED,
    TRACING,
    otlp_endpoint,
)

TRACER_NAME = "mesh"
OTEL_PROTOS_REPAIR = "python -m grpc_resilience_mesh.launch.otel_protos"
"""The repair of the clash, named here as text: the services import nothing of the launcher."""


def _file_bytes(raw: str) -> int:
    return settings.integer(raw, 64 * 1024)  # below 64 KiB a file holds a few hundred spans


def _backups(raw: str) -> int:
    return settings.integer(raw, 0, 100)


def _positive_ms(raw: str) -> float:
    return settings.number(raw, 0, above=True, unit="milliseconds")


V = settings.Var
TRACES_DIR = V("MESH_TRACES_DIR", settings.text, "", "spans as JSON lines in <dir>/<service>.jsonl")
REPLICA = V("MESH_REPLICA", settings.text, "", "a replica's name: its own traces file")
MAX_BYTES = V(
    "MESH_TRACES_MAX_BYTES", _file_bytes, DEFAULT_MAX_BYTES, "a traces file rotates past this size"
)
BACKUPS = V("MESH_TRACES_BACKUPS", _backups, DEFAULT_BACKUPS, "rotated traces files kept")
DELAY_MS = V(
    "OTEL_BSP_SCHEDULE_DELAY", _positive_ms, None, "milliseconds between span export batches"
)


def choose_exporter(service_name: str, environ: Mapping[str, str]) -> SpanExporter | None:
    endpoint = otlp_endpoint(environ)
    if EXPORTER.read(environ) == "none":
        return None
    if endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as err:
            raise ConfigError(
                f"{ENDPOINT.name}: the OTLP exporter does not import ({err}): "
                "xds-protos (from grpcio-csds, the [xds] extra) overwrote opentelemetry-proto's "
                f"files (grpc/grpc#42428); run `{OTEL_PROTOS_REPAIR}` once"
            ) from None
        return OTLPSpanExporter(endpoint=endpoint)
    traces_dir = TRACES_DIR.read(environ)
    if traces_dir:
        # A replica (MESH_REPLICA, e.g. profile-2) writes a file of its own.
        name = REPLICA.read(environ) or service_name
        return JsonLinesSpanExporter(
            Path(traces_dir) / f"{name}.jsonl",
            max_bytes=MAX_BYTES.read(environ),
            backups=BACKUPS.read(environ),
        )
    return None


def setup_tracing(service_name: str, environ: Mapping[str, str]) -> TracerProvider | None:
    """The service's provider with the chosen exporter, or None when tracing is off."""
    if not TRACING.read(environ) or SDK_DISABLED.read(environ):
        return None
    delay_ms = DELAY_MS.read(environ)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    exporter = choose_exporter(service_name, environ)
    if isinstance(exporter, JsonLinesSpanExporter):
        delay_s = DEFAULT_DELAY_S if delay_ms is None else delay_ms / 1000
        provider.add_span_processor(JsonLinesSpanProcessor(exporter, delay_s=delay_s))
    elif exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=delay_ms))
    return provider


class MeshTracing:
    """What serve() mounts: a server interceptor, client observers and the event listener."""

    def __init__(self, provider: TracerProvider, environ: Mapping[str, str] | None = None) -> None:
        self.provider = provider
        self.spans = SpanFactory(provider.get_tracer(TRACER_NAME), environ=environ)
        self.listener: Listener = tracing_listener
        self.call_observer: AttemptObserver = self.spans.call_observer
        self.attempt_observer: AttemptObserver = self.spans.attempt_observer

    @classmethod
    def from_env(cls, service_name: str, environ: Mapping[str, str]) -> MeshTracing | None:
        provider = setup_tracing(service_name, environ)
        return None if provider is None else cls(provider, environ)

    def server_interceptor(self, own_traces: bool = False) -> ServerLayer:
        """The SERVER span layer; `own_traces`: each call starts a trace of its own, keeping the
        client's traceparent beside it (the gateway with MESH_PUBLIC_TRACEPARENT=link)."""
        if own_traces:
            return PublicTracingInterceptor(self.spans)
        return TracingServerInterceptor(self.spans)

    async def shutdown(self) -> None:
        """Flushes what is queued, then stops the exporter (off the event loop: it blocks)."""
        await asyncio.to_thread(self.provider.shutdown)


def server_tracing(tracing: MeshTracing | None, own_traces: bool = False) -> list[ServerLayer]:
    """The interceptors to put first on the server: the tracing one, or none."""
    return [] if tracing is None else [tracing.server_interceptor(own_traces)]
