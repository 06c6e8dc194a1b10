"""`mesh bench mesh`: CPU per GetHome across every process, the mesh against plain grpc.aio.

The variants run interleaved, round by round, against processes that stay up for the whole run: the
floor (grpc_resilience_mesh.bench.plain_mesh: the same servicers on bare grpc.aio), and one embedded
mesh (grpc_resilience_mesh.launch.mesh.Mesh, full policy) whose services are restarted with each
variant's environment (direct or through the embedded Toxiproxy; tracing off, to JSON-lines files,
or over OTLP/gRPC to a discarding sink, grpc_resilience_mesh.bench.otlp_sink). Each measured window
is one load-client process (grpc_resilience_mesh.bench.mesh_client) sending `requests` GetHome calls
with `concurrency` in flight after a warm-up; the CPU of every process on GetHome's path (and of the
client) is utime+stime from /proc/<pid>/stat, read just before and just after the window; a
service's column sums its replicas (the mesh runs two of profile and of recommendation). Loopback
only; every process started here is stopped by PID.
"""

from __future__ import annotations

import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpc_resilience_mesh.bench.mesh_client import KEY_ENV
from grpc_resilience_mesh.bench.window import Window
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports, free_ports
from grpc_resilience_mesh.launch.processes import wait_serving
from grpc_resilience_mesh.services.topology import replica_of

if TYPE_CHECKING:
    from grpc_resilience_mesh.bench.plain_mesh import PlainMesh

FLOOR = "floor"


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    direct: bool = False
    tracing: str = "off"
    """off, file (JSON lines in the mesh's traces dir) or otlp (to the discarding sink)."""
    relay: bool = True
    """The gateway's connection relay (PUBLIC_FRONT) in front of its public port."""


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(FLOOR, "plain grpc.aio, same servicers, no interceptors/proxies/tracing"),
        Variant("direct", "mesh, --direct, tracing off", direct=True),
        Variant("direct-no-relay", "mesh, --direct, tracing off, no relay", True, relay=False),
        Variant("proxied", "mesh, proxied, tracing off"),
        Variant("traced", "mesh, proxied, tracing on (file export, the default)", tracing="file"),
        Variant("traced-otlp", "mesh, proxied, tracing on (OTLP to a sink)", tracing="otlp"),
    )
}
DEFAULT_VARIANTS = tuple(v for v in VARIANTS if v != "direct-no-relay")
"""What a run measures unless told: the relay's own cost is measured when asked for."""
PATH_PROCESSES = ("gateway", "recommendation", "profile", "proxy", "client")
"""The processes a GetHome crosses (the proxy only when proxied), whose CPU is the total."""
SETTLE_S = 0.7
"""Quiet time before and after each window: longer than the span processor's schedule delay
(the launcher's OTEL_BSP_SCHEDULE_DELAY, 500 ms), so the warm-up's spans are exported before
the window and the window's own spans within it."""
MEASURE_TIMEOUT_S = 300.0
"""Longest a measured window (warm-up included) may take before the run is abandoned."""

CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(RuntimeError):
    """The benchmark could not measure (a process failed, calls failed, a window overran)."""


def cpu_seconds(pid: int) -> float:
    """utime+stime of process `pid`, all its threads, dead ones included, in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _read_line(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchError("the load client did not answer in time")
        ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
        if ready:
            line = proc.stdout.readline()
            if not line:
                raise BenchError(f"the load client exited ({proc.wait()})")
            return line.strip()


def client_command(
    target: str, *, requests: int, concurrency: int, warmup: int, api_key: str | None
) -> tuple[list[str], dict[str, str]]:
    """The load client's argv and environment: the key travels in the environment, never in
    argv (a generated key may start with '-', which argparse reads as an option)."""
    args = [sys.executable, "-m", "grpc_resilience_mesh.bench.mesh_client", "--target", target]
    args += ["--requests", str(requests), "--concurrency", str(concurrency)]
    args += ["--warmup", str(warmup)]
    env = {**os.environ}
    env.pop("MESH_API_KEYS", None)
    env.pop(KEY_ENV, None)
    if api_key:
        env[KEY_ENV] = api_key
    return args, env


def measure(
    target: str,
    pids: dict[str, tuple[int, ...]],
    *,
    requests: int,
    concurrency: int,
    api_key: str | None,
    warmup: int,
) -> Window:
    """One window: a fresh client warms up, then CPU of `pids` (each role's processes, summed)
    and the client is read around its `requests` calls."""
    args, env = client_command(
        target, requests=requests, concurrency=concurrency, warmup=warmup, api_key=api_key
    )
    client = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + MEASURE_TIMEOUT_S
    try:
        line = _read_line(client, deadline)
        if line != "ready":
            raise BenchError(f"load client: {line}")
        every = {**pids, "client": (client.pid,)}
        time.sleep(SETTLE_S)
        before = {name: sum(map(cpu_seconds, group)) for name, group in every.items()}
        assert client.stdin is not None
        client.stdin.write("go\n")
        client.stdin.flush()
        line = _read_line(client, deadline)
        time.sleep(SETTLE_S)
        after = {name: sum(map(cpu_seconds, group)) for name, group in every.items()}
        result = json.loads(line)
        if result.get("failures"):
            raise BenchError(f"GetHome calls failed during the window: {result['failures']}")
        return Window(
            requests=requests,
            elapsed_s=result["elapsed_s"],
            p50_ms=result["p50_ms"],
            p99_ms=result["p99_ms"],
            degraded=result["degraded"],
            cpu_s={name: after[name] - before[name] for name in every},
        )
    finally:
        if client.poll() is None:
            client.kill()
        client.wait()


def _mesh_env(variant: Variant, sink: str | None) -> dict[str, str]:
    env = {
        "MESH_TRACING": "0" if variant.tracing == "off" else "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
        "MESH_TLS": "0",
        "PUBLIC_FRONT": "1" if variant.relay else "0",
    }
    if variant.tracing == "otlp":
        assert sink is not None
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"http://{sink}"
    return env


@contextmanager
def _otlp_sink(log_dir: Path) -> Iterator[tuple[str, int]]:
    """The discarding OTLP receiver, as a process: its address and PID."""
    addr = f"127.0.0.1:{free_ports(1)[0]}"
    with (log_dir / "otlp-sink.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grpc_resilience_mesh.bench.otlp_sink", "--listen", addr],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        wait_serving(addr, 30.0)
        yield addr, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _mesh_pids(mesh: Mesh) -> dict[str, tuple[int, ...]]:
    """Each role's processes: every replica counts (profile and profile-2 are `profile`)."""
    by_role: dict[str, list[int]] = {}
    for p in mesh.procs:
        by_role.setdefault(replica_of(p.name), []).append(p.popen.pid)
    pids = {n: tuple(by_role[n]) for n in ("gateway", "recommendation", "profile")}
    if not mesh.direct:
        pids["proxy"] = tuple(by_role["toxiproxy"])
    return pids


def _configure(mesh: Mesh, variant: Variant, sink: str | None) -> None:
    """Restart the mesh's services under `variant` (Toxiproxy keeps running)."""
    env = _mesh_env(variant, sink)
    if mesh.direct == variant.direct and all(mesh.env.get(k) == v for k, v in env.items()):
        return
    mesh.direct = variant.direct
    mesh.env.update(env)
    mesh.restart_services(mesh.policy)


def summarise(windows: dict[str, list[Window]]) -> dict[str, Any]:
    """Per variant: CPU ms per request per process (summed over rounds), req/s, p50/p99
    (medians over rounds); ratios to the floor."""
    variants: dict[str, dict[str, Any]] = {}
    for name, runs in windows.items():
        total_requests = sum(w.requests for w in runs)
        per_process = {
            proc: 1000 * sum(w.cpu_s.get(proc, 0.0) for w in runs) / total_requests
            for proc in sorted({p for w in runs for p in w.cpu_s})
        }
        total = sum(v for p, v in per_process.items() if p in PATH_PROCESSES)
        variants[name] = {
            "label": VARIANTS[name].label,
            "rounds": len(runs),
            "requests": total_requests,
            "cpu_ms_per_request": per_process,
            "total_cpu_ms_per_request": total,
            "throughput_rps": statistics.median(w.requests / w.elapsed_s for w in runs),
            "p50_ms": statistics.median(w.p50_ms for w in runs),
            "p99_ms": statistics.median(w.p99_ms for w in runs),
            "rps_by_round": [w.requests / w.elapsed_s for w in runs],
            "degraded": sum(w.degraded for w in runs),
        }
    floor = variants[FLOOR]
    for row in variants.values():
        row["cpu_ratio"] = row["total_cpu_ms_per_request"] / floor["total_cpu_ms_per_request"]
        row["throughput_ratio"] = row["throughput_rps"] / floor["throughput_rps"]
    return {"variants": variants}


class Terminated(BaseException):
    """SIGTERM arrived (a `timeout`, a cancelled job): unwind, stopping what was started."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(f"signal {signum}")


@contextmanager
def _terminate_unwinds() -> Iterator[None]:
    """While the bench runs, SIGTERM unwinds like Ctrl-C, so every process it started (the
    floor, the mesh, the sink, the client) is stopped rather than left running orphaned.
    Only the main thread can take signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _window_target(
    variant: Variant, plain: PlainMesh, mesh: Mesh, sink: str, sink_pid: int
) -> tuple[str, dict[str, tuple[int, ...]], str | None]:
    """(gateway address, each role's PIDs, API key) of `variant`'s window: the floor as it
    runs, the mesh restarted under the variant's environment if it is not already."""
    if variant.name == FLOOR:
        return plain.gateway, plain.pids(), None
    _configure(mesh, variant, sink)
    pids = _mesh_pids(mesh)
    if variant.tracing == "otlp":
        pids["otlp-sink"] = (sink_pid,)
    return mesh.gateway, pids, mesh.api_key


def _chosen(variants: tuple[str, ...], ghz: bool) -> list[Variant]:
    """The variants to measure, the floor first; refused before anything starts: an unknown
    variant (ValueError), ghz asked for but not built (GhzError naming `make peers`)."""
    from grpc_resilience_mesh.bench.ghz import ghz_binary

    if ghz:
        ghz_binary()
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    return [VARIANTS[n] for n in VARIANTS if n in variants or n == FLOOR]


def _started_mesh(root: Path, chosen: list[Variant], sink: str) -> Mesh:
    """The embedded mesh (full policy) under the first mesh variant's environment; not started
    when only the floor is measured."""
    first = next((v for v in chosen if v.name != FLOOR), None)
    mesh = Mesh(
        state_dir=root / "mesh",
        ports=Ports.auto(),
        direct=False,
        policy="full",
        env=_mesh_env(first, sink) if first else {},
    )
    if first is not None:
        mesh.start()
    return mesh


def run_mesh_bench(
    *,
    requests: int = 1500,
    concurrency: int = 16,
    rounds: int = 3,
    variants: tuple[str, ...] = DEFAULT_VARIANTS,
    warmup: int = 200,
    work_dir: Path | None = None,
    ghz: bool = False,
) -> dict[str, Any]:
    """Measure `variants` (the floor always among them), interleaved over `rounds`; with `ghz`, each
    window of our client is followed by one of ghz's (grpc_resilience_mesh.bench.ghz) on the same
    target, and `result["ghz"]` compares the two clients."""
    from grpc_resilience_mesh.bench.ghz import compare, ghz_window

    chosen = _chosen(variants, ghz)
    with _terminate_unwinds(), tempfile.TemporaryDirectory(prefix="mesh-bench-") as tmp:
        root = work_dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        windows: dict[str, list[Window]] = {v.name: [] for v in chosen}
        ghz_windows: dict[str, list[Any]] = {v.name: [] for v in chosen} if ghz else {}
        load = {"requests": requests, "concurrency": concurrency, "warmup": warmup}
        started = time.monotonic()
        from grpc_resilience_mesh.bench.plain_mesh import PlainMesh, floor_instances

        instances = floor_instances()
        floor_ports = dict(zip(instances, free_ports(len(instances)), strict=True))
        with (
            _otlp_sink(root) as (sink, sink_pid),
            PlainMesh(floor_ports, root / "logs") as plain,
        ):
            mesh = _started_mesh(root, chosen, sink)
            try:
                for _ in range(rounds):
                    for variant in chosen:
                        target, pids, key = _window_target(variant, plain, mesh, sink, sink_pid)
                        windows[variant.name].append(measure(target, pids, api_key=key, **load))
                        if ghz:
                            ghz_windows[variant.name].append(
                                ghz_window(target, api_key=key, **load)
                            )
            finally:
                mesh.stop()
        result = summarise(windows)
        if ghz:
            result["ghz"] = compare(windows, ghz_windows)
    result.update(
        requests=requests,
        concurrency=concurrency,
        rounds=rounds,
        warmup=warmup,
        cpus=os.cpu_count(),
        loadavg_1m=os.getloadavg()[0],
        wall_s=time.monotonic() - started,
        total_processes=list(PATH_PROCESSES),
    )
    return result
