"""The resilience library as a user gets it: its wheel, installed into a clean venv, pulls in
grpcio and protobuf (and grpcio's typing-extensions) and nothing else, and importing it (and
building a pipeline) loads no module of the mesh, pydantic, yaml, OpenTelemetry or Prometheus."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIBRARY = ROOT / "libs" / "grpc-aio-resilience"
UV = Path(sys.executable).parent / "uv"
FOREIGN = ("grpc_resilience_mesh", "pydantic", "yaml", "opentelemetry", "prometheus_client")

PROBE = """
import json, sys
import grpc_aio_resilience as r
r.build_pipeline(r.EdgePolicy(), dependency="d", bus=r.EventBus())
r.server_interceptors("kv", r.ServerPolicy())
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.mark.slow
@pytest.mark.skipif(not UV.is_file(), reason="uv is installed by `make venv`")
def test_the_wheel_needs_only_grpcio(tmp_path: Path) -> None:
    shutil.copytree(LIBRARY, tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path / "dist"), str(tmp_path / "src")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("grpc_aio_resilience-*.whl")
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    installed = subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--python", str(python), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-2000:]
    listed = subprocess.run(
        [str(UV), "pip", "list", "--format", "json", "--python", str(python)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = sorted(p["name"].lower() for p in json.loads(listed.stdout))
    # typing-extensions is grpcio's own dependency
    assert names == ["grpc-aio-resilience", "grpcio", "protobuf", "typing-extensions"], names
    probe = subprocess.run(
        [str(python), "-I", "-c", PROBE], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    loaded = set(json.loads(probe.stdout))
    assert "grpc_aio_resilience" in loaded
    assert not loaded & set(FOREIGN), sorted(loaded & set(FOREIGN))
