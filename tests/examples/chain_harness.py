"""The chain example as a user runs it: back, middle and front as processes, `python -m
examples.chain.<name>`, wired by the environment, each waited for until gRPC health says
SERVING, and stopped by PID whatever the test did."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.launch.polling import poll_until
from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.launch.processes import log_tail, terminate

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Chain:
    front: str
    middle: str
    back: str
    fault_admin: str


def health(addr: str) -> str:
    """What gRPC health at `addr` says: SERVING, ..., or the code of the failed check."""
    with grpc.insecure_channel(addr) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=0.5
            )
        except grpc.RpcError as err:
            return str(err.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def serving(addr: str) -> bool:
    return health(addr) == "SERVING"


@contextmanager
def started(
    module: str, env: dict[str, str], log_path: Path, ready: Callable[[str], bool] = serving
) -> Iterator[str]:
    """`python -m <module>` with `env` added, until `ready` at its LISTEN_ADDR; stopped by PID."""
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        addr = env["LISTEN_ADDR"]
        up = poll_until(lambda: ready(addr) or popen.poll() is not None, READY_TIMEOUT_S)
        assert up and popen.poll() is None, f"{module} not ready at {addr}:\n{log_tail(log_path)}"
        yield addr
    finally:
        terminate(popen, grace_s=5.0)


@contextmanager
def chain_running(log_dir: Path) -> Iterator[Chain]:
    """The three services, each calling the next directly, back with its fault admin."""
    front, middle, back, admin = (f"127.0.0.1:{p}" for p in free_ports(4))
    with ExitStack() as stack:
        for module, env in (
            ("examples.chain.back", {"LISTEN_ADDR": back, "FAULT_ADMIN_ADDR": admin}),
            ("examples.chain.middle", {"LISTEN_ADDR": middle, "BACK_ADDR": back}),
            ("examples.chain.front", {"LISTEN_ADDR": front, "MIDDLE_ADDR": middle}),
        ):
            name = module.rpartition(".")[2]
            stack.enter_context(started(module, env, log_dir / f"{name}.log"))
        yield Chain(front, middle, back, admin)
