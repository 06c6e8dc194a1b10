"""A service process told to dial through xDS where grpcio-csds is not installed (the base
install: it is the [xds] extra's) stops at start-up with one line naming the variable and the
install, and exit 2: a configuration error, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from grpc_resilience_mesh.services.settings import XDS_EXTRA

# grpc_csds made unimportable, as where the extra is not installed; then the service's __main__.
SERVICE = """
import sys
sys.modules["grpc_csds"] = None
from grpc_resilience_mesh.services.recommendation.servicer import build
from grpc_resilience_mesh.services.runtime.server import run
run("recommendation", build)
"""


def test_a_service_dialling_xds_without_grpcio_csds_exits_2_naming_the_extra() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MESH_", "GRPC_"))}
    env.update(
        LISTEN_ADDR="127.0.0.1:0",
        ADMIN_ADDR="127.0.0.1:0",
        METRICS_ADDR="127.0.0.1:0",
        PROFILE_ADDR="xds:///profile",
    )
    done = subprocess.run(
        [sys.executable, "-c", SERVICE], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("recommendation: configuration error: PROFILE_ADDR")
    assert XDS_EXTRA in lines[0]
