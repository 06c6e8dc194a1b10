"""Where the built peers live (.peers/bin, filled by `make peers`); a skip when one is absent."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

PEERS_BIN = Path(
    os.environ.get("MESH_PEERS_BIN", Path(__file__).resolve().parents[2] / ".peers/bin")
)


def peer_binary(name: str) -> Path:
    """The path of a built peer (toxiproxy-server, toxiproxy-cli, jaeger, mailpit), or skip."""
    path = PEERS_BIN / name
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is missing: run `make peers` (needs the go toolchain)")
    return path


def peer_jar(name: str) -> tuple[Path, Path]:
    """(java, the jar) of a Maven-built peer (limits-differential.jar), or skip naming what is
    missing."""
    java = shutil.which("java")
    if java is None:
        pytest.skip(f"no `java` on PATH: {name} cannot run (then `make peers` needs mvn and java)")
    path = PEERS_BIN / name
    if not path.is_file():
        pytest.skip(f"{path} is missing: run `make peers` (needs mvn and java)")
    return Path(java), path
