"""The library needs nothing but grpcio at run time: importing every name of its face, loading
options from plain data and building a client pipeline and server interceptors loads no
module of the mesh, of a validation or YAML library, or of a telemetry library."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = {"pydantic", "pydantic_core", "yaml", "opentelemetry", "prometheus_client"}
FORBIDDEN |= {"grpc_resilience_mesh"}

USE_THE_LIBRARY = """
import sys
import grpc_aio_resilience as resilience

for name in resilience.__all__:
    getattr(resilience, name)
policy = resilience.from_dict(
    resilience.EdgePolicy, {"retry": {"max_attempts": 2}, "hedging": {"enabled": True}}
)
pipeline = resilience.build_pipeline(policy, dependency="kv", bus=resilience.EventBus())
resilience.server_interceptors("kv", resilience.ServerPolicy(max_in_flight=8))
print(type(pipeline).__name__)
print(" ".join(sorted({module.split(".")[0] for module in sys.modules})))
"""


def test_using_the_library_loads_no_module_outside_grpcio_and_the_standard_library() -> None:
    done = subprocess.run(
        [sys.executable, "-c", USE_THE_LIBRARY], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    built, modules = done.stdout.splitlines()
    assert built == "Pipeline"
    loaded = set(modules.split())
    assert "grpc_aio_resilience" in loaded and "grpc" in loaded
    assert sorted(loaded & FORBIDDEN) == []
