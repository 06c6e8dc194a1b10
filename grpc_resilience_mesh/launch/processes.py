"""The launcher's processes one at a time: spawn records, readiness waits, a graceful stop.

A readiness wait fails fast with the process's own last log lines when it exits during
start-up, and gives up at once when the mesh is stopping (`abort`).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.launch.polling import poll_until
from grpc_resilience_mesh.services.runtime.tls import CA_CERT
from grpc_resilience_mesh.services.topology import replica_of

GRACE_S = 10.0
"""How long a stopped process gets to exit after SIGTERM before SIGKILL (services drain
in-flight calls for SHUTDOWN_GRACE_S, 5 s by default)."""


class LaunchError(RuntimeError):
    """A process of the mesh failed to start; the message carries its own error output."""


@dataclass
class ChildProcess:
    """One process the launcher started, and how it was started."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    started_at: float = field(default_factory=time.monotonic)
    supervised: bool = True
    """One of the mesh's own processes (not an experiment's extra worker)."""
    stopped: bool = False
    """Stopped on purpose (Mesh.kill): a supervisor leaves it down, as `unless-stopped` does."""


@dataclass(frozen=True)
class ProcessStatus:
    """One of the mesh's own processes as a supervisor sees it."""

    name: str
    pid: int
    exit_code: int | None
    """None while it runs; negative: the signal that ended it."""
    started_at: float
    """time.monotonic() when it was spawned."""


def describe_exit(code: int | None) -> str:
    if code is None:
        return "is running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def terminate(
    popen: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace_s: float = GRACE_S
) -> int:
    """Send `sig`, wait up to `grace_s` for the process to exit, then SIGKILL it; its exit code."""
    if popen.poll() is None:
        popen.send_signal(sig)
        try:
            return popen.wait(grace_s)
        except subprocess.TimeoutExpired:
            popen.kill()
    return popen.wait()


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no output)"
    return "\n".join(text[-lines:]) or "(no output)"


def health_channel(addr: str, tls_dir: Path | None = None, name: str = "") -> grpc.Channel:
    """A blocking channel for probes: TLS (verifying `name` against the mesh CA) if `tls_dir`.
    A replica (`profile-2`) serves under its service's certificate, so that name is verified."""
    if tls_dir is None:
        return grpc.insecure_channel(addr)
    creds = grpc.ssl_channel_credentials((tls_dir / CA_CERT).read_bytes())
    override = [("grpc.ssl_target_name_override", replica_of(name))]
    return grpc.secure_channel(addr, creds, options=override)


def wait_ready(
    proc: ChildProcess,
    ready: Callable[[], bool],
    what: str,
    timeout_s: float,
    abort: threading.Event | None = None,
) -> None:
    """Poll `ready` until it holds while `proc` still runs; LaunchError with its log tail if
    `proc` exits first, `timeout_s` passes, or `abort` is set (the mesh is stopping)."""

    def up() -> bool:
        if proc.popen.poll() is None and ready() and proc.popen.poll() is None:
            return True  # polled twice: another process on its port may answer while it dies
        if proc.popen.poll() is not None:
            raise LaunchError(
                f"{proc.name} exited with code {proc.popen.returncode} during start-up:\n"
                f"{log_tail(proc.log_path)}"
            )
        if abort is not None and abort.is_set():
            raise LaunchError(f"{proc.name}: start-up abandoned, the mesh is stopping")
        return False

    if not poll_until(up, timeout_s):
        raise LaunchError(
            f"{proc.name} did not {what} within {timeout_s:.0f} s\n{log_tail(proc.log_path)}"
        )


def wait_serving(
    addr: str,
    timeout_s: float,
    proc: ChildProcess | None = None,
    tls_dir: Path | None = None,
    *,
    abort: threading.Event | None = None,
) -> None:
    """Block until `addr` answers grpc.health.v1 Check with SERVING (over TLS if `tls_dir`)."""
    with health_channel(addr, tls_dir, proc.name if proc else "") as channel:
        stub = health_pb2_grpc.HealthStub(channel)

        def serving() -> bool:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5)
            except grpc.RpcError:
                return False
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

        if proc is not None:
            wait_ready(proc, serving, "report SERVING", timeout_s, abort)
            return
        if not poll_until(serving, timeout_s):
            raise LaunchError(f"{addr} did not report SERVING within {timeout_s:.0f} s")


def smtp_greets(addr: str) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5) as sock:
            return sock.recv(3) == b"220"
    except OSError:
        return False


def http_answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=0.5):
            return True
    except OSError:
        return False


def log_line(name: str, msg: str) -> bytes:
    """A line in the services' own JSON log format
    (grpc_resilience_mesh.services.runtime.logging)."""
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    entry = {"ts": ts, "level": "warning", "service": name, "logger": "chaos.launcher", "msg": msg}
    return (json.dumps(entry) + "\n").encode()
