"""`pip install ./libs/grpc-aio-resilience .` (the README's install without make: the resilience
library is a distribution of its own, from the repository) into a fresh venv gives a `mesh` that
runs: the CLI's libraries are in the
base install (they were in an extra, and `mesh` failed with ModuleNotFoundError: typer), and
`mesh up` starts the mesh and suggests a command that works though the venv is not on the PATH.
Slow: a whole install (the pip cache makes it minutes, not seconds)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

IGNORED = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.install, pytest.mark.timeout(1200)]


def test_pip_install_then_mesh_up(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # a copy: setuptools builds in the source folder, and a build/ left in libs/ would be linted
    library = tmp_path / "grpc-aio-resilience"
    shutil.copytree(ROOT / "libs" / "grpc-aio-resilience", library, ignore=IGNORED)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [
            *(str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"),
            *(str(library), str(ROOT)),
        ],
        check=True,
        timeout=1000,
    )
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("MESH_STATE_DIR", None)
    out = tmp_path / "up.txt"
    with out.open("w") as sink:
        up = subprocess.Popen(
            [venv / "bin" / "mesh", "up", "--auto-ports", "--no-console", "--state-dir", "state"],
            cwd=tmp_path,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while "try:" not in out.read_text() and up.poll() is None:
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.5)
        text = out.read_text()
        assert "try:" in text, text
        line = next(x for x in text.splitlines() if x.startswith("try:"))
        assert "MESH_STATE_DIR=state venv/bin/mesh call home" in line, line
    finally:
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
    assert up.returncode == 0, out.read_text()
