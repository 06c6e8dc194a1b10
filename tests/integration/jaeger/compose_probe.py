"""Runs the real Jaeger the way the compose stack does, alone in a network namespace of its
own, and tries the compose file's health check and OTLP address against it.

    python -m tests.integration.jaeger.compose_probe SPEC_JSON

In a fresh network namespace (root: unshare(CLONE_NEWNET)) only loopback exists, so Jaeger can
listen on the very ports the compose file names (its built-in all-in-one config, with
JAEGER_LISTEN_HOST=0.0.0.0 as the image sets it) without meeting anything else on this machine,
and nothing outside can reach it. Prints one JSON object; exit 77 when no namespace can be made.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

from grpc_resilience_mesh.client import jaeger_query as jq
from grpc_resilience_mesh.services.telemetry.tracing import setup_tracing

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
NO_NAMESPACE = 77


def private_network() -> str | None:
    """Moves this process into a new network namespace with loopback up; why not, or None."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        return f"unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())} (needs root)"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
    return None


def health_check(argv: list[str], timeout_s: float) -> int:
    """The compose health check's exit status (past its timeout: a failure, as in Compose)."""
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout_s, check=False).returncode
    except subprocess.TimeoutExpired:
        return -1
    except FileNotFoundError:
        return 127


def http_status(url: str, method: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=3) as r:
            return int(r.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def send_span(otlp_endpoint: str) -> str:
    """One span through the services' own exporter set-up; its trace id once flushed."""
    provider = setup_tracing("compose-probe", {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_endpoint})
    assert provider is not None
    with provider.get_tracer("probe").start_as_current_span("compose-probe") as span:
        trace_id = f"{span.get_span_context().trace_id:032x}"
    provider.shutdown()
    return trace_id


def probe(spec: dict[str, Any]) -> dict[str, Any]:
    argv, timeout_s = spec["health"], spec["health_timeout_s"]
    result: dict[str, Any] = {"before": health_check(argv, timeout_s)}
    with tempfile.TemporaryDirectory() as workdir:
        jaeger = subprocess.Popen(
            [spec["jaeger"]],
            cwd=workdir,
            env={**os.environ, **spec["env"]},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            started = time.monotonic()
            checks = []
            while time.monotonic() - started < spec["deadline_s"] and jaeger.poll() is None:
                checks.append(health_check(argv, timeout_s))
                if checks[-1] == 0:
                    result["healthy_after_s"] = round(time.monotonic() - started, 2)
                    break
                time.sleep(0.2)
            result["checks"] = len(checks)
            url = next(a for a in argv if a.startswith("http"))
            result["GET"], result["HEAD"] = http_status(url, "GET"), http_status(url, "HEAD")
            trace_id = send_span(spec["otlp_endpoint"])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    spans = jq.jaeger_trace(spec["query_url"], trace_id)
                except jq.JaegerError:
                    time.sleep(0.2)
                    continue
                result["span"] = [(s["name"], s["service"]) for s in spans]
                break
        finally:
            jaeger.terminate()
            try:  # all-in-one takes about 10 s to stop gracefully here; nothing to keep
                _, err = jaeger.communicate(timeout=2)
            except subprocess.TimeoutExpired:
                jaeger.kill()
                _, err = jaeger.communicate()
        result["after"] = health_check(argv, timeout_s)
        result["log_tail"] = err.decode(errors="replace")[-1500:]
    return result


def main() -> int:
    spec = json.loads(sys.argv[1])
    why_not = private_network()
    if why_not is not None:
        print(json.dumps({"no_namespace": why_not}))
        return NO_NAMESPACE
    print(json.dumps(probe(spec)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
