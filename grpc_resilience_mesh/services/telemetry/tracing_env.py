"""Where the services send spans, as the environment says: tracing off, OTLP to an endpoint, or
(neither) span files. Declared here, apart from the tracing package, so that a launcher can
read the same choice the services will make (grpc_resilience_mesh.client.trace_source records
it in mesh.json) without loading the OpenTelemetry SDK that the package's setup imports."""

from __future__ import annotations

from collections.abc import Mapping

from grpc_resilience_mesh.services import settings

V = settings.Var
TRACING = V("MESH_TRACING", settings.flag, True, "off: no spans at all")
SDK_DISABLED = V("OTEL_SDK_DISABLED", settings.flag, False, "true: no spans at all (OTel's name)")
EXPORTER = V(
    "OTEL_TRACES_EXPORTER", settings.lower_choice("otlp", "none"), "", "none: spans not exported"
)
TRACES_ENDPOINT = V("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", settings.text, "", "OTLP/gRPC for spans")
ENDPOINT = V(
    "OTEL_EXPORTER_OTLP_ENDPOINT", settings.text, "", "OTLP/gRPC, e.g. http://127.0.0.1:4317"
)


def otlp_endpoint(environ: Mapping[str, str]) -> str | None:
    return TRACES_ENDPOINT.read(environ) or ENDPOINT.read(environ) or None
