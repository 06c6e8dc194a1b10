"""Where the Go-built peers live (.peers/bin, filled by `make peers`); a skip when one is absent."""

from __future__ import annotations

import os
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
