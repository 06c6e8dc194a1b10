"""The real control plane (mesh-xds, built by `make peers`) as a process, and channels through
gRPC's xDS client to it. gRPC reads its bootstrap once per process, so one plane serves every
test of a process (the `plane` fixture); each test puts its own config and names its
listener afresh (gRPC also keeps one xDS client per target)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc.aio
import pytest

from grpc_aio_resilience import from_dict
from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.launch.processes import terminate
from grpc_resilience_mesh.launch.xds_config import bootstrap, write_json
from grpc_resilience_mesh.launch.xds_plane import XDS_TOKEN_ENV
from tests.support.peers import peer_binary

NODE = "gateway"


@dataclass
class Plane:
    ads: str
    admin: str
    config_path: Path
    token: str
    """What its admin requires (MESH_XDS_TOKEN), as `mesh up` gives it the run's admin token."""

    def write(self, config: dict[str, Any]) -> None:
        """Change the file the plane watches (it pushes within its 100 ms poll)."""
        write_json(self.config_path, config)

    def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """One admin request with the token; what it answered."""
        request = urllib.request.Request(
            f"http://{self.admin}{path}",
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            raw: bytes = answer.read()
            return raw

    def config(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.request("GET", "/config"))
        return found

    def put(self, config: dict[str, Any]) -> int:
        """Replace the config through the admin HTTP; the version it pushed."""
        answer = self.request("PUT", "/config", json.dumps(config).encode())
        return int(json.loads(answer)["version"])


def listener_name() -> str:
    return f"svc-{uuid.uuid4().hex[:8]}"


def one_edge(name: str, endpoints: list[str], **policy: Any) -> dict[str, Any]:
    return {"nodes": {NODE: {name: {"endpoints": endpoints, **policy}}}}


@contextmanager
def running_plane(tmp_path: Path, config: dict[str, Any], poll_s: float = 0.1) -> Iterator[Plane]:
    """mesh-xds serving `config` on loopback (reading its file every `poll_s`) with a fresh admin
    token, and this process's bootstrap pointing at it."""
    binary = peer_binary("mesh-xds")  # skips, naming `make peers`, when it is not built
    config_path, ready = tmp_path / "xds.json", tmp_path / "ready.json"
    write_json(config_path, config)
    log = (tmp_path / "mesh-xds.log").open("w")
    token = secrets.token_urlsafe(32)
    proc = subprocess.Popen(
        [str(binary), "-config", str(config_path), "-ready", str(ready), f"-poll={poll_s}s"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, XDS_TOKEN_ENV: token},
    )
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mesh-xds did not start: {(tmp_path / 'mesh-xds.log').read_text()}")
            time.sleep(0.02)
        bound = json.loads(ready.read_text())
        with pytest.MonkeyPatch.context() as env:
            env.setenv("GRPC_XDS_BOOTSTRAP_CONFIG", json.dumps(bootstrap(bound["ads"], NODE)))
            env.delenv("GRPC_XDS_BOOTSTRAP", raising=False)
            yield Plane(bound["ads"], bound["admin"], config_path, token)
    finally:
        terminate(proc, signal.SIGTERM, 5.0)
        log.close()


def xds_channel(name: str, bus: EventBus | None = None) -> grpc.aio.Channel:
    """Our edge's channel (resilient_channel) to xds:///name, its interceptor's own retry,
    breaker and bulkhead off: what xDS does is all there is."""
    policy = from_dict(
        EdgePolicy,
        {
            "deadline": {"total_s": 5.0, "attempt_s": 5.0},
            "retry": {"max_attempts": 1},
            "breaker": {"enabled": False},
            "bulkhead": {"enabled": False},
        },
    )
    bus = bus or EventBus()
    pipeline = build_pipeline(policy, dependency=name, bus=bus, clock=SystemClock())
    interceptor = ResilienceInterceptor(pipeline, dependency=name, clock=SystemClock())
    return resilient_channel(f"xds:///{name}", interceptor, bus=bus, dependency=name)
