"""Puts opentelemetry-proto's generated files back where grpcio-csds's xds-protos overwrote them.

xds-protos (grpcio-csds's dependency, for `mesh up --xds`) ships an `opentelemetry/proto/` of its
own, generated from OTLP v0.9, and a pip install that puts it after opentelemetry-proto replaces
the current files (grpc/grpc#42428; grpc/grpc#42429 drops them from xds-protos). Then
`from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope` fails, and OTLP
export with it. Which package wins depends on pip's install order, so a fresh .venv can go
either way. This checks, and when they were overwritten reinstalls the same opentelemetry-proto
(no dependencies): its files win again, and the envoy protos that import them still load (the
messages they use, AnyValue and KeyValue, are in both).

    python -m tools.otel_protos [--python PATH]

Exit 0 when the protos are right (or were put right), 1 when they could not be.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

PROBE = "from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope"
VERSION = "import importlib.metadata as m; print(m.version('opentelemetry-proto'))"


def intact(python: str) -> bool:
    return subprocess.run([python, "-c", PROBE], capture_output=True).returncode == 0


def repair(python: str) -> str | None:
    """None when the protos are right (now); else why not."""
    if intact(python):
        return None
    found = subprocess.run([python, "-c", VERSION], capture_output=True, text=True)
    if found.returncode != 0:
        return "opentelemetry-proto is not installed"
    version = found.stdout.strip()
    print(
        f"otel protos: xds-protos overwrote opentelemetry-proto {version}'s files "
        "(grpc/grpc#42428); reinstalling it ..."
    )
    pip = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall"]
    done = subprocess.run([*pip, f"opentelemetry-proto=={version}"], capture_output=True, text=True)
    if done.returncode != 0:
        return f"pip install opentelemetry-proto=={version}: {done.stderr.strip()[-400:]}"
    return None if intact(python) else "still broken after the reinstall"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the venv's interpreter")
    args = parser.parse_args(argv)
    why = repair(args.python)
    if why is not None:
        print(f"otel protos: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
