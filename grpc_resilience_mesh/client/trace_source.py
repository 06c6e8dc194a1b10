"""Where a running mesh's spans went, as `mesh up` recorded it in mesh.json, so that what reads
traces back (the console's traces tab, `mesh call`'s hint) reads that copy and no other: Jaeger's
query API when the services export OTLP and the Jaeger UI is named (MESH_JAEGER_UI), this run's
lines of the span files otherwise. Files left by an earlier run are never shown as this one's.

The services choose their exporter from the same environment, read here as they read it
(grpc_resilience_mesh.services.telemetry.tracing_env, without the OTel SDK): tracing off, else
OTLP when an endpoint is set, else the span files.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.client.traces import JAEGER_UI
from grpc_resilience_mesh.services.telemetry import tracing_env as tracing

DEFAULT_TRACES = "var/traces"
"""Where `mesh traces` reads without --dir or --state-dir."""
TRACES_TO = "traces_to"
"""mesh.json `extra` keys: files, otlp or off ..."""
OTLP_ENDPOINT = "otlp_endpoint"
JAEGER = "jaeger_ui"
STARTED_NS = "started_ns"
"""... the collector's address, the Jaeger UI (and query API) and when the run began."""


def record(environ: Mapping[str, str], started_ns: int) -> dict[str, str]:
    """The entries mesh.json's `extra` gets: where the services given `environ` send spans,
    and when the run began (`started_ns`, time.time_ns())."""
    found = {STARTED_NS: str(started_ns)}
    off = tracing.EXPORTER.read(environ) == "none" or tracing.SDK_DISABLED.read(environ)
    if off or not tracing.TRACING.read(environ):
        return {**found, TRACES_TO: "off"}
    endpoint = tracing.otlp_endpoint(environ)
    if endpoint:
        jaeger = JAEGER_UI.read(environ).rstrip("/")
        return {
            **found,
            TRACES_TO: "otlp",
            OTLP_ENDPOINT: endpoint,
            **({JAEGER: jaeger} if jaeger else {}),
        }
    return {**found, TRACES_TO: "files"}


@dataclass(frozen=True)
class TraceSource:
    """One running mesh's traces: `kind` files, jaeger (read back through its API), otlp (sent
    to a collector nothing here can read) or off."""

    kind: str
    where: str
    """The traces directory, Jaeger's base URL or the OTLP endpoint."""
    since_ns: int = 0
    """When the run began: spans before it are an earlier run's."""

    @classmethod
    def of(cls, state: MeshState) -> TraceSource:
        """The source mesh.json names; a mesh.json without one (an older `mesh up`) is read as
        span files, all of them."""
        extra = state.extra
        since = int(extra.get(STARTED_NS, "0") or 0)
        kind = extra.get(TRACES_TO, "files")
        if kind == "otlp":
            if extra.get(JAEGER):
                return cls("jaeger", extra[JAEGER], since)
            return cls("otlp", extra.get(OTLP_ENDPOINT, ""), since)
        if kind == "off":
            return cls("off", "", since)
        return cls("files", str(Path(state.state_dir) / "traces"), since)

    def label(self) -> str:
        """Where the listed traces come from, said in a few words (the tab's heading)."""
        if self.kind == "jaeger":
            return f"Jaeger at {self.where} (this mesh exports OTLP)"
        if self.kind == "otlp":
            return (
                f"sent to the OTLP collector at {self.where}: none kept here; set MESH_JAEGER_UI "
                "for `mesh up` to read Jaeger's copy"
            )
        if self.kind == "off":
            return "tracing is off for this mesh (MESH_TRACING=0 or OTEL_SDK_DISABLED)"
        started = time.strftime("%H:%M:%S", time.localtime(self.since_ns / 1e9))
        return f"{self.where}, this run's (since {started})" if self.since_ns else self.where

    def hint(self, trace_id: str, program: str) -> str:
        """How to draw `trace_id`, for the line `mesh call` prints after an answer."""
        if self.kind == "jaeger":
            return f"{program} traces --jaeger {self.where} {trace_id}; Jaeger's copy"
        if self.kind == "otlp":
            return (
                f"sent to the OTLP collector at {self.where}; "
                f"{program} traces --jaeger URL {trace_id} reads Jaeger's copy"
            )
        if self.kind == "off":
            return "tracing is off for this mesh"
        where = Path(self.where).absolute()
        with suppress(ValueError):
            where = where.relative_to(Path.cwd())
        default = where.absolute() == Path(DEFAULT_TRACES).absolute()
        shown = trace_id if default else f"--dir {shlex.quote(str(where))} {trace_id}"
        return f"{program} traces {shown}; from {where}"
