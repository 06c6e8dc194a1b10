"""The topology's command services: started with their wiring in the environment, waited for
until ready (gRPC health SERVING, or a server that answers without a health service), and
stopped by PID (SIGTERM, then SIGKILL) on every exit path; on Linux they also get SIGTERM from
the kernel when the runner dies without one (launch/parent_death.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.chaos.topology.model import ServiceSpec, Topology
from grpc_resilience_mesh.chaos.topology.wiring import Wiring
from grpc_resilience_mesh.launch.parent_death import dies_with_parent
from grpc_resilience_mesh.launch.polling import poll_until
from grpc_resilience_mesh.launch.processes import ChildProcess, LaunchError, terminate, wait_ready

STOP_GRACE_S = 5.0
"""How long a started service gets to exit after SIGTERM before SIGKILL."""


class ServiceNotReady(RuntimeError):
    """A service did not become ready in its ready_timeout_s; the message names both."""


def answers(addr: str) -> bool:
    """The server at `addr` reports SERVING, or answers but serves no health service."""
    with grpc.insecure_channel(addr) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5)
        except grpc.RpcError as err:
            return bool(err.code() == grpc.StatusCode.UNIMPLEMENTED)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def argv(spec: ServiceSpec) -> list[str]:
    """The command, with a bare `python` taken as the interpreter running the runner (the
    project's venv), so the same file works wherever `mesh` is installed."""
    assert spec.command is not None
    first, *rest = spec.command
    return [sys.executable if first in ("python", "python3") else first, *rest]


class ServiceSet:
    """The started services of one run; `stop()` is safe to call at any point, twice."""

    def __init__(self, topo: Topology, topo_dir: Path, wiring: Wiring, log_dir: Path) -> None:
        self.topo = topo
        self.topo_dir = topo_dir
        self.wiring = wiring
        self.log_dir = log_dir
        self.started: dict[str, ChildProcess] = {}

    def start(self) -> None:
        """Start every command service, then wait for every service (started or not)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name, spec in self.topo.services.items():
            if spec.command is not None:
                self.started[name] = self._spawn(name, spec)
        for name, spec in self.topo.services.items():
            self._wait(name, spec)

    def _spawn(self, name: str, spec: ServiceSpec) -> ChildProcess:
        env = self.wiring.env(self.topo, name)
        cwd = (self.topo_dir / spec.cwd).resolve() if spec.cwd else self.topo_dir
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "wb") as log:
            try:
                popen = subprocess.Popen(
                    argv(spec),
                    cwd=cwd,
                    env={**os.environ, **env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=dies_with_parent(),  # a runner killed with SIGKILL ends it too
                )
            except OSError as err:
                raise ServiceNotReady(f"{name}: cannot start {spec.command}: {err}") from None
        return ChildProcess(name, popen, log_path, env, supervised=False)

    def _wait(self, name: str, spec: ServiceSpec) -> None:
        addr = self.wiring.listen[name]
        timeout = spec.ready_timeout_s
        what = f"become ready at {addr} (gRPC health SERVING, or any answer)"
        proc = self.started.get(name)
        try:
            if proc is not None:
                wait_ready(proc, lambda: answers(addr), what, timeout)
            elif not poll_until(lambda: answers(addr), timeout):
                raise LaunchError(f"{name} did not {what} within {timeout:g} s")
        except LaunchError as err:
            raise ServiceNotReady(f"service {name} (ready_timeout_s: {timeout:g}): {err}") from None

    def pids(self) -> dict[str, int]:
        return {name: proc.popen.pid for name, proc in self.started.items()}

    def stop(self) -> None:
        """SIGTERM each started service by its PID, SIGKILL after STOP_GRACE_S."""
        for proc in reversed(list(self.started.values())):
            terminate(proc.popen, grace_s=STOP_GRACE_S)
