"""A `mesh up` subprocess as the e2e tests see it (shared by conftest and the tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.polling import wait_until

MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]


@dataclass
class MeshUp:
    """A running `mesh up --auto-ports`: its state (var/mesh.json) and how to stop it."""

    proc: subprocess.Popen[bytes]
    state_dir: Path
    state: dict[str, Any]

    def metadata(self) -> tuple[tuple[str, str], ...]:
        key = self.state.get("api_key")
        return (("authorization", f"Bearer {key}"),) if key else ()

    def saved_state(self) -> dict[str, Any]:
        """mesh.json as it is on disk now."""
        return dict(json.loads((self.state_dir / "mesh.json").read_text()))

    def mesh(self, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
        """Run `mesh ARGS` against this mesh (MESH_STATE_DIR), as a user in a second terminal."""
        env = {**os.environ, "MESH_STATE_DIR": str(self.state_dir)}
        return subprocess.run(
            [*MESH, *args], capture_output=True, text=True, env=env, timeout=timeout_s
        )

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> str:
        """SIGTERM, as Ctrl-C or a supervisor would (or `sig`); the command's output."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=30)
        return out.decode()


@contextmanager
def running_mesh_up(
    state_dir: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[MeshUp]:
    """`mesh up --auto-ports --state-dir STATE_DIR ARGS` (in `env`, else this environment)
    until its state file is written; SIGTERM at the end."""
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        path = state_dir / "mesh.json"

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"mesh up exited early: {proc.communicate()[0].decode()}")
            return path.exists()

        wait_until(up, 90, "mesh up writing its state file", 0.1)
        yield MeshUp(proc, state_dir, json.loads(path.read_text()))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie left for its parent to reap is not running
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def serving(addr: str) -> bool:
    """True when `addr` answers grpc.health.v1 Check with SERVING."""
    with grpc.insecure_channel(addr) as ch:
        try:
            reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=1)
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
