"""`mesh up`'s control socket: how `mesh restart` asks the running mesh to restart a process.

One JSON object per line each way, one request per connection, on a Unix socket in a
directory only its owner may enter (<state dir>/run/, 0700; a private temporary directory
when that path is too long for a socket). mesh.json records where it is.

Requests: {"op": "restart", "service": NAME}, {"op": "policy", "policy": NAME} (a policy the
services took on in place, for later restarts), {"op": "ping"}. Replies: {"ok": true, ...}
or {"ok": false, "error": MESSAGE, "unknown": true when the service is not in the mesh}.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
_READ_TIMEOUT_S = 5.0


class ControlUnavailable(ConnectionError):
    """Nothing listens on the control socket: the mesh that wrote mesh.json is gone."""


class ControlServer:
    """The listening end, served by the supervisor's thread between its checks."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path: Path | None = None
        self._sock: socket.socket | None = None
        self._tmp_dir: Path | None = None

    def open(self) -> Path:
        """Bind the socket (replacing one a crashed mesh left behind: the caller holds the
        state dir's lock, so no live mesh uses it); its path."""
        run = self.state_dir / "run"
        path = run / "control.sock"
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            self._tmp_dir = Path(tempfile.mkdtemp(prefix="mesh-"))  # created 0700
            path = self._tmp_dir / "control.sock"
        else:
            run.mkdir(mode=0o700, exist_ok=True)
            if run.stat().st_mode & 0o077:  # made by an older version, before anything is in it
                run.chmod(0o700)
        path.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        sock.listen(8)
        self._sock, self.path = sock, path
        return path

    def serve(self, handler: Handler, timeout_s: float) -> None:
        """Answer the requests that arrive within `timeout_s` (none: just wait that long)."""
        assert self._sock is not None, "open() first"
        ready, _, _ = select.select([self._sock], [], [], timeout_s)
        while ready:
            conn, _ = self._sock.accept()
            with conn:
                conn.settimeout(_READ_TIMEOUT_S)
                try:
                    request = json.loads(_read_line(conn))
                    if not isinstance(request, dict):
                        raise ValueError("a request is a JSON object")
                except (OSError, ValueError) as err:
                    reply: dict[str, Any] = {"ok": False, "error": f"bad request: {err}"}
                else:
                    reply = handler(request)
                try:
                    conn.sendall(json.dumps(reply).encode() + b"\n")
                except OSError:
                    pass  # the client gave up; the work is done anyway
            ready, _, _ = select.select([self._sock], [], [], 0)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        if self._tmp_dir is not None:
            shutil.rmtree(self._tmp_dir, ignore_errors=True)


def request(path: str, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send one request and wait up to `timeout_s` for its reply. ControlUnavailable when no
    mesh listens there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as err:
            raise ControlUnavailable(str(err)) from None
        sock.sendall(json.dumps(message).encode() + b"\n")
        reply = json.loads(_read_line(sock) or "{}")
    if not isinstance(reply, dict) or "ok" not in reply:
        raise ControlUnavailable("the mesh closed the connection without an answer")
    return reply


def _read_line(conn: socket.socket, limit: int = 65536) -> str:
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode()
