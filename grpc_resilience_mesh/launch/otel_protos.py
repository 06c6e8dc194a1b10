"""Puts opentelemetry-proto's generated files back where grpcio-csds's xds-protos overwrote them.

xds-protos (grpcio-csds's dependency, installed by the `[xds]` extra for `mesh up --xds`) ships
an `opentelemetry/proto/` of its own, generated from OTLP v0.9, and an install that puts it
after opentelemetry-proto replaces the current files (grpc/grpc#42428; grpc/grpc#42429 drops
them from xds-protos). Then `InstrumentationScope` no longer imports, and OTLP export with it.
Which package wins depends on the installer's order; `pip install '.[xds]'` into a venv that
already has the base install always lets xds-protos win. This checks, and when they were
overwritten reinstalls the same opentelemetry-proto (no dependencies) with the venv's pip, or
uv where the venv has no pip: its files win again, and the envoy protos that import them still
load (the messages they use, AnyValue and KeyValue, are in both).

    python -m grpc_resilience_mesh.launch.otel_protos [--python PATH]

Exit 0 when the protos are right (or were put right), 1 when they could not be.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping

REPAIR = "python -m grpc_resilience_mesh.launch.otel_protos"
"""The command every message about the clash names."""

NEEDED = {
    "opentelemetry.proto.common.v1.common_pb2": "InstrumentationScope",
    "opentelemetry.proto.trace.v1.trace_pb2": "ScopeSpans",
}
"""What the OTLP exporter imports that OTLP v0.9's files (xds-protos's) do not have."""

PROBE = "; ".join(f"from {module} import {name}" for module, name in NEEDED.items())
VERSION = "import importlib.metadata as m; print(m.version('opentelemetry-proto'))"
OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def intact(python: str) -> bool:
    """Whether `python`'s environment imports the current OTLP protos."""
    return subprocess.run([python, "-c", PROBE], capture_output=True).returncode == 0


def intact_here() -> bool:
    """Whether this interpreter's environment imports the current OTLP protos."""
    try:
        return all(hasattr(importlib.import_module(m), name) for m, name in NEEDED.items())
    except ImportError:
        return False


def otlp_refusal(environ: Mapping[str, str]) -> str | None:
    """Why services started from here with this environment could not export OTLP (an
    endpoint is set and the protos are xds-protos's), naming the repair; None when they can."""
    if not any(environ.get(name, "").strip() for name in OTLP_ENDPOINTS) or intact_here():
        return None
    return (
        "OTLP export is set (OTEL_EXPORTER_OTLP_ENDPOINT) but opentelemetry-proto's files were "
        "overwritten by xds-protos, which grpcio-csds (the [xds] extra) brings "
        f"(grpc/grpc#42428): run `{REPAIR}` once, then start again"
    )


def reinstaller(python: str) -> list[str] | None:
    """The command that reinstalls a package into `python`'s environment, without its
    dependencies: its pip, else uv (on PATH or beside this interpreter); None when neither."""
    if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        return [python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall"]
    uv = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
    if uv is None:
        return None
    return [uv, "pip", "install", "--quiet", "--no-deps", "--reinstall", "--python", python]


def repair(python: str) -> str | None:
    """None when the protos are right (now); else why not."""
    if intact(python):
        return None
    found = subprocess.run([python, "-c", VERSION], capture_output=True, text=True)
    if found.returncode != 0:
        return "opentelemetry-proto is not installed"
    version = found.stdout.strip()
    install = reinstaller(python)
    if install is None:
        return f"neither pip nor uv installs into {python}"
    print(
        f"otel protos: xds-protos overwrote opentelemetry-proto {version}'s files "
        "(grpc/grpc#42428); reinstalling it ..."
    )
    command = [*install, f"opentelemetry-proto=={version}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return f"{' '.join(command)}: {done.stderr.strip()[-400:]}"
    return None if intact(python) else "still broken after the reinstall"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the venv's interpreter")
    args = parser.parse_args(argv)
    why = repair(args.python)
    if why is not None:
        print(f"otel protos: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
