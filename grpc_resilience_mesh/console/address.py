"""Where a running console listens, kept beside its token (`<state dir>/console-url`, written when
it starts, removed when it stops), so that `mesh load` drives the same background load as the
console's page: one load per mesh, whoever started it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.console.auth import TOKEN_FILE, write_secret

URL_FILE = "console-url"


def publish(state_dir: Path, url: str) -> None:
    write_secret(state_dir / URL_FILE, url)


def withdraw(state_dir: Path, url: str) -> None:
    """Remove the file if it still names `url` (a newer console's is left alone)."""
    path = state_dir / URL_FILE
    try:
        if path.read_text().strip() == url:
            path.unlink()
    except OSError:
        pass


@dataclass(frozen=True)
class ConsoleAddress:
    """A running console's base URL and the token its API wants."""

    url: str
    token: str


def find(state_dir: Path) -> ConsoleAddress | None:
    """The console of the mesh in `state_dir`, or None when none runs there."""
    try:
        url = (state_dir / URL_FILE).read_text().strip()
        token = (state_dir / TOKEN_FILE).read_text().strip()
    except OSError:
        return None
    return ConsoleAddress(url, token) if url and token else None
