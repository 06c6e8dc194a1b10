"""The real Toxiproxy server (a Go binary built by `make peers`) as a child process on loopback.

It is driven over the same HTTP API as the embedded server, so callers only need its base URL.
The binary is `$MESH_TOXIPROXY_BIN`, else `.peers/bin/toxiproxy-server` in the checkout.
`MESH_TOXIPROXY=real` makes `mesh toxiproxy` (and so `mesh up`, the runner and `make demo`,
which start it) replace itself with that binary: same process, same port, same HTTP API.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.services import settings

CHECKOUT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 10.0


class RealToxiproxyError(RuntimeError):
    """The binary is missing, or the server did not answer GET /version in time."""


TOXIPROXY_BIN = settings.Var(
    "MESH_TOXIPROXY_BIN", settings.text, "", "the real toxiproxy-server (default .peers/bin)"
)


def binary_path(environ: dict[str, str] | None = None) -> Path:
    configured = TOXIPROXY_BIN.read(environ)
    return Path(configured) if configured else CHECKOUT / ".peers" / "bin" / "toxiproxy-server"


SERVERS = ("embedded", "real")
TOXIPROXY = settings.Var(
    "MESH_TOXIPROXY", lambda raw: settings.choice(raw, SERVERS), "embedded", "`--toxiproxy`'s value"
)


def use_server(server: str) -> None:
    """Choose the Toxiproxy every mesh this process starts will run: its `mesh toxiproxy` child
    reads MESH_TOXIPROXY. Raises RealToxiproxyError for an unknown name or a missing binary."""
    if server not in SERVERS:
        raise RealToxiproxyError(f"--toxiproxy {server}: expected embedded or real")
    if server == "real" and not os.access(binary_path(), os.X_OK):
        raise RealToxiproxyError(f"no real Toxiproxy at {binary_path()}: run `make peers`")
    os.environ[TOXIPROXY.name] = server


def exec_real(host: str, port: int, config: Path | None, binary: Path | None = None) -> None:
    """Become `toxiproxy-server -host H -port P [-config FILE]` (never returns)."""
    path = binary or binary_path()
    if not os.access(path, os.X_OK):
        raise RealToxiproxyError(f"no real Toxiproxy at {path}: run `make peers` (needs go)")
    args = [str(path), "-host", host, "-port", str(port)]
    if config is not None:
        args += ["-config", str(config)]
    os.execv(path, args)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/version", timeout=1) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


class RealToxiproxy:
    """`toxiproxy-server -host H -port P [-config FILE]`, started and stopped as a context."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Path | None = None,
        binary: Path | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.config = config
        self.binary = binary or binary_path()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> RealToxiproxy:
        if not os.access(self.binary, os.X_OK):
            raise RealToxiproxyError(
                f"no real Toxiproxy at {self.binary}: run `make peers` (needs go)"
            )
        for _ in range(3):  # a chosen free port can be taken before the server binds it
            # Toxiproxy logs the port it was given, not the one bound: port 0 would be unknowable.
            self.port = self.port or free_port(self.host)
            if self._launch():
                return self
            self.port = 0
        raise RealToxiproxyError(f"{self.binary} did not answer on {self.host}: see its log")

    def _launch(self) -> bool:
        args = [str(self.binary), "-host", self.host, "-port", str(self.port)]
        if self.config is not None:
            args += ["-config", str(self.config)]
        log = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        finally:
            if self.log_path and not isinstance(log, int):
                log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if _answers(self.base_url):
                return True
            time.sleep(0.02)
        self.stop()
        return False

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def __enter__(self) -> RealToxiproxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
