"""Start-up figures: `mesh` commands and a service from exec to SERVING, median of N runs.

Each run is a fresh process with PYTHONDONTWRITEBYTECODE=1 (as on this project's machines): its
speed then depends on the bytecode `make venv`/`make demo` compiled at install. Wall is exec to exit
(or to SERVING); CPU is the child's user+system time to that moment. `mesh traces ID` is timed over
as many span files as `mesh up` keeps (grpc_resilience_mesh.bench.trace_volume), indexed ahead as
`mesh chaos run` and `mesh up` do: the first lookup, then the median of N.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.bench.trace_volume import PROCESSES, TRACES_MB, write_spans
from grpc_resilience_mesh.client.trace_index import index_traces
from grpc_resilience_mesh.launch.ports import free_ports

TICK_S = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Figure:
    """The median wall and CPU seconds of `runs` starts of `what`."""

    what: str
    wall_s: float
    cpu_s: float
    runs: int


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def command(what: str, argv: list[str], runs: int, check: bool = False) -> Figure:
    """`argv` run `runs` times to its exit (`check`: each must exit 0)."""
    walls, cpus = [], []
    for _ in range(runs):
        start = time.monotonic()
        before = os.times()
        subprocess.run(argv, env=_env(), capture_output=True, timeout=120, check=check)
        after = os.times()
        walls.append(time.monotonic() - start)
        cpus.append(
            after.children_user
            - before.children_user
            + after.children_system
            - before.children_system
        )
    return Figure(what, statistics.median(walls), statistics.median(cpus), runs)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK_S


def _serving(stub: health_pb2_grpc.HealthStub) -> bool:
    try:
        reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=0.2)
    except grpc.RpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def service_once(module: str, timeout_s: float = 60.0) -> tuple[float, float]:
    """(wall, CPU) seconds from exec of `python -m module` to its health check's SERVING."""
    listen_port, admin_port, metrics_port = free_ports(3)
    listen = f"127.0.0.1:{listen_port}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **_env(),
            "LISTEN_ADDR": listen,
            "ADMIN_ADDR": f"127.0.0.1:{admin_port}",
            "METRICS_ADDR": f"127.0.0.1:{metrics_port}",
            "MESH_TRACES_DIR": tmp,
            "PAYMENT_DB_PATH": str(Path(tmp) / "ledger.sqlite3"),
        }
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", module],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with grpc.insecure_channel(listen) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                while not _serving(stub):
                    if proc.poll() is not None or time.monotonic() - start > timeout_s:
                        raise RuntimeError(f"{module} did not serve ({proc.returncode})")
                    time.sleep(0.02)
                wall, cpu = time.monotonic() - start, _cpu_s(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    return wall, cpu


def service(module: str, runs: int) -> Figure:
    """The median of `runs` starts of `module` to SERVING."""
    starts = [service_once(module) for _ in range(runs)]
    return Figure(
        f"{module} exec -> SERVING",
        statistics.median(w for w, _ in starts),
        statistics.median(c for _, c in starts),
        runs,
    )


def table(figures: list[Figure]) -> str:
    """The figures as a markdown table."""
    rows = [f"| {f.what} | {f.wall_s:.2f} | {f.cpu_s:.2f} | {f.runs} |" for f in figures]
    return "\n".join(["| start | wall s | CPU s | runs |", "|---|---:|---:|---:|", *rows])


def mesh_argv() -> list[str]:
    """The `mesh` command beside this Python (the venv's), else `python -m
    grpc_resilience_mesh.cli`."""
    script = Path(sys.executable).parent / "mesh"
    return [str(script)] if script.exists() else [sys.executable, "-m", "grpc_resilience_mesh.cli"]


def traces_lookup(runs: int, traces_mb: int = TRACES_MB) -> list[Figure]:
    """`mesh traces ID` over `traces_mb` MB of span files (written to a temporary folder and
    deleted after): building the index ahead (in this process, as `mesh chaos run` does), the
    first lookup, and the median of `runs` more."""
    with tempfile.TemporaryDirectory(prefix="mesh-bench-traces-") as tmp:
        wanted, written = write_spans(Path(tmp), traces_mb * 1_000_000)
        volume = f"{written / 1e6:.0f} MB in {len(PROCESSES) * 2} files"
        wall, cpu = time.monotonic(), time.process_time()
        index_traces(Path(tmp))
        built = Figure(
            f"mesh traces index, built ahead ({volume})",
            time.monotonic() - wall,
            time.process_time() - cpu,
            1,
        )
        argv = [*mesh_argv(), "traces", wanted, "--dir", tmp]
        first = command(f"mesh traces ID, first lookup ({volume})", argv, 1, check=True)
        later = command(f"mesh traces ID, later lookups ({volume})", argv, runs, check=True)
    return [built, first, later]


def run_startup_bench(runs: int, state_dir: Path, traces_mb: int = TRACES_MB) -> list[Figure]:
    """Every start-up figure; `mesh call home` only against a running `mesh up` in state_dir;
    `mesh traces ID` over `traces_mb` MB of spans (none with 0)."""
    mesh = mesh_argv()
    figures = [
        command("mesh --version", [*mesh, "--version"], runs),
        command("mesh --help", [*mesh, "--help"], runs),
    ]
    if (state_dir / "mesh.json").exists():
        os.environ["MESH_STATE_DIR"] = str(state_dir)
        figures.append(
            command(
                "mesh call home (end to end)", [*mesh, "call", "home", "--user", "u-0001"], runs
            )
        )
    figures.append(service("grpc_resilience_mesh.services.profile", runs))
    if traces_mb > 0:
        figures += traces_lookup(runs, traces_mb)
    return figures
