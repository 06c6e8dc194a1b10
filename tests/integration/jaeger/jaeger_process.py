"""The real Jaeger v2 all-in-one (`make peers` builds it into .peers/bin/jaeger), started on
loopback with every listener on a free port, and stopped by PID.

Jaeger runs its own built-in all-in-one configuration (memory storage, the query service, the
OTLP receiver, healthcheckv2); `--set` flags only move each listener to a free 127.0.0.1 port
(the query service would otherwise listen on every interface) and leave out the listeners a
test does not use (Jaeger's and Zipkin's own receivers, remote sampling, expvar, zpages, the
Prometheus metrics endpoint) and the query service's tracing of itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.ports import free_ports
from tests.support.peers import PEERS_BIN
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[3]
JAEGER_BIN = PEERS_BIN / "jaeger"


def jaeger_or_skip() -> Path:
    if not JAEGER_BIN.is_file():
        pytest.skip(f"no real Jaeger at {JAEGER_BIN}: `make peers` builds it")
    return JAEGER_BIN


def built_version() -> str:
    stamp = JAEGER_BIN.with_name("jaeger.version")
    return stamp.read_text().split()[0] if stamp.is_file() else "unknown"


@dataclass(frozen=True)
class Jaeger:
    """A running Jaeger: where to send OTLP and where to ask."""

    otlp_grpc: str
    """host:port of the OTLP/gRPC receiver."""
    query_url: str
    """Base URL of the query service (UI and /api/v3)."""
    health_url: str
    """healthcheckv2's /status."""
    pid: int
    log: Path


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return bool(json.loads(reply.read()).get("healthy"))
    except (OSError, ValueError):
        return False


@contextmanager
def running_jaeger(binary: Path, log_dir: Path, timeout_s: float = 60.0) -> Iterator[Jaeger]:
    grpc_port, http_port, health, health_grpc, query, query_grpc = free_ports(6)
    loopback = "127.0.0.1"
    sets = {
        "service.extensions": "[jaeger_storage,jaeger_query,healthcheckv2]",
        "service.pipelines.traces.receivers": "[otlp]",
        "service.telemetry.metrics.level": "none",
        # The query service traces itself by default, over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT
        # or localhost:4317: here that is not this Jaeger, and its stop would wait 10 s on it.
        "extensions.jaeger_query.enable_tracing": "false",
        "receivers.otlp.protocols.grpc.endpoint": f"{loopback}:{grpc_port}",
        "receivers.otlp.protocols.http.endpoint": f"{loopback}:{http_port}",
        "extensions.healthcheckv2.http.endpoint": f"{loopback}:{health}",
        "extensions.healthcheckv2.grpc.endpoint": f"{loopback}:{health_grpc}",
        "extensions.jaeger_query.http.endpoint": f"{loopback}:{query}",
        "extensions.jaeger_query.grpc.endpoint": f"{loopback}:{query_grpc}",
    }
    log = log_dir / "jaeger.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(binary), *(f"--set={key}={value}" for key, value in sets.items())],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "JAEGER_LISTEN_HOST": loopback},
        )
    jaeger = Jaeger(
        otlp_grpc=f"{loopback}:{grpc_port}",
        query_url=f"http://{loopback}:{query}",
        health_url=f"http://{loopback}:{health}/status",
        pid=proc.pid,
        log=log,
    )
    try:

        def up() -> bool:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise AssertionError(f"jaeger exited {proc.returncode}:\n{tail}")
            return _healthy(jaeger.health_url)

        wait_until(up, timeout_s=timeout_s, what="jaeger healthy", interval_s=0.1)
        yield jaeger
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
