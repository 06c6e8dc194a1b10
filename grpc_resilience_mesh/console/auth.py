"""The console's per-run secret, as Jupyter's: made when the console starts, printed in the URL
`mesh up` shows (`/?token=...`) and kept in `<state dir>/console-token` (0600, removed when
the console stops), so that only whoever can read that file or that terminal drives the mesh.

Every API call, GET or POST, must send `Authorization: Bearer <token>`; only the page's own
files (/, /static/...) are served without it. GETs too, because /api/state and /api/traces show
what the state dir's modes keep to its owner: the faults and load in force, checkouts' traces
(users, amounts). The page takes the token from its URL once, keeps it in sessionStorage and
sends it with each request (grpc_resilience_mesh/console/static/console.js).
"""

from __future__ import annotations

import hmac
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOKEN_FILE = "console-token"
_BEARER = "bearer "


def write_secret(path: Path, text: str) -> None:
    """Replace `path` atomically with a file born 0600 holding `text`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class ConsoleToken:
    """One console's secret and the file that holds it."""

    value: str
    path: Path

    @classmethod
    def create(cls, state_dir: Path) -> ConsoleToken:
        """A fresh token, written to `state_dir`/console-token (0600)."""
        token = cls(secrets.token_urlsafe(32), state_dir / TOKEN_FILE)
        state_dir.mkdir(parents=True, exist_ok=True)
        write_secret(token.path, token.value)
        return token

    def remove(self) -> None:
        """Delete the file if it still holds this token (a newer console's is left alone)."""
        try:
            if self.path.read_text().strip() == self.value:
                self.path.unlink()
        except OSError:
            pass

    def url(self, base: str) -> str:
        """`base` with the token, to open in a browser."""
        return f"{base}?token={self.value}"

    def refuse(self, authorization: str | None) -> dict[str, Any] | None:
        """None when the request's Authorization header carries the token; else the JSON
        body of the 401 answer."""
        header = authorization or ""
        if header[: len(_BEARER)].lower() == _BEARER and hmac.compare_digest(
            header[len(_BEARER) :].strip().encode(), self.value.encode()
        ):
            return None
        return {
            "error": "this console needs its token: open the URL `mesh up` printed (it ends in "
            f"?token=...), or send `Authorization: Bearer <the token in {self.path}>`"
        }
