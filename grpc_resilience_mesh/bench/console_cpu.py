"""The mesh's CPU per GetHome with the console open (polled once a second, as the page does) and
closed, in interleaved rounds on one embedded mesh: `python -m
grpc_resilience_mesh.bench.console_cpu`.

Measured as `mesh bench mesh` measures (grpc_resilience_mesh.bench.mesh.measure: a fresh load
client, CPU from /proc of every process around the window), over every process of the mesh
(services, replicas, Toxiproxy, redis, SMTP sink), not only GetHome's path: the console scrapes them
all. `--results PATH` rewrites the page's measured block (grpc_resilience_mesh/bench/results.py).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.bench.mesh import BenchError, cpu_seconds, measure
from grpc_resilience_mesh.bench.results import Machine, markdown_table, rewrite
from grpc_resilience_mesh.bench.window import Window
from grpc_resilience_mesh.console.server import ConsoleServer
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports


def _poll(console: ConsoleServer | None, stop: threading.Event) -> None:
    """GET /api/state once a second, as an open page does, until `stop`."""
    while console is not None and not stop.wait(1.0):
        request = urllib.request.Request(console.url + "api/state")
        request.add_header("Authorization", f"Bearer {console.token.value}")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()


def _idle_cpu_ms_per_s(
    pids: dict[str, int], console: ConsoleServer | None, seconds: float
) -> float:
    """The mesh's CPU per second with no load, the console polled or not (None)."""
    stop = threading.Event()
    poller = threading.Thread(target=_poll, args=(console, stop), daemon=True)
    if console is not None:
        poller.start()
    before = sum(cpu_seconds(pid) for pid in pids.values())
    time.sleep(seconds)
    after = sum(cpu_seconds(pid) for pid in pids.values())
    stop.set()
    if poller.is_alive():
        poller.join()
    return 1000 * (after - before) / seconds


def _window(
    gateway: str,
    roles: dict[str, tuple[int, ...]],
    requests: int,
    concurrency: int,
    api_key: str | None,
    tries: int = 3,
) -> Window:
    """One measured window; one whose calls failed (an overloaded machine opens breakers) is
    measured again, up to `tries` times."""
    for attempt in range(1, tries + 1):
        try:
            return measure(
                gateway,
                roles,
                requests=requests,
                concurrency=concurrency,
                api_key=api_key,
                warmup=200,
            )
        except BenchError:
            if attempt == tries:
                raise
            time.sleep(2.0)  # the breakers' open time, so the next window starts closed
    raise AssertionError("unreachable")


def run(requests: int, concurrency: int, rounds: int, idle_s: float = 10.0) -> dict[str, Any]:
    windows: dict[str, list[Window]] = {"closed": [], "open": []}
    idle: dict[str, list[float]] = {"closed": [], "open": []}
    with tempfile.TemporaryDirectory(prefix="console-cpu-") as tmp:
        mesh = Mesh(state_dir=Path(tmp), ports=Ports.auto(), direct=False, policy="full")
        state = mesh.start()
        server = ConsoleServer(state).start()
        try:
            pids = {p.name: p.popen.pid for p in mesh.procs}
            roles: dict[str, tuple[int, ...]] = {n: (pid,) for n, pid in pids.items()}
            for _ in range(rounds):
                if idle_s > 0:
                    idle["closed"].append(_idle_cpu_ms_per_s(pids, None, idle_s))
                    idle["open"].append(_idle_cpu_ms_per_s(pids, server, idle_s))
                for variant in ("closed", "open"):
                    stop = threading.Event()
                    poller = threading.Thread(target=_poll, args=(server, stop), daemon=True)
                    if variant == "open":
                        poller.start()
                    try:
                        windows[variant].append(
                            _window(state.gateway, roles, requests, concurrency, state.api_key)
                        )
                    finally:
                        stop.set()
                        if poller.is_alive():
                            poller.join()
        finally:
            server.close()
            mesh.stop()
    out: dict[str, Any] = {"requests": requests, "rounds": rounds, "concurrency": concurrency}
    for variant, runs in windows.items():
        total = sum(w.requests for w in runs)
        mesh_cpu = sum(s for w in runs for n, s in w.cpu_s.items() if n != "client")
        out[variant] = {
            "mesh_cpu_ms_per_request": 1000 * mesh_cpu / total,
            "seconds": sum(w.elapsed_s for w in runs),
            "by_round": [
                1000 * sum(s for n, s in w.cpu_s.items() if n != "client") / w.requests
                for w in runs
            ],
        }
    if idle["open"]:
        # What one open console costs the mesh, per second of polling, measured with no load.
        out["idle_mesh_cpu_ms_per_s"] = {k: sum(v) / len(v) for k, v in idle.items()}
    out["change"] = (
        out["open"]["mesh_cpu_ms_per_request"] / out["closed"]["mesh_cpu_ms_per_request"] - 1
    )
    return out


def results_block(result: dict[str, Any], machine: Machine, command: str) -> str:
    """Closed against open: the mesh's CPU per second idle, per GetHome under load, by round."""
    idle = result.get("idle_mesh_cpu_ms_per_s", {})
    rows = [
        (
            variant,
            f"{idle[variant]:.1f}" if variant in idle else "-",
            f"{result[variant]['mesh_cpu_ms_per_request']:.2f}",
            ", ".join(f"{ms:.2f}" for ms in result[variant]["by_round"]),
        )
        for variant in ("closed", "open")
    ]
    cost = (
        f"One open console: **{idle['open'] - idle['closed']:+.1f} ms of CPU a second** idle "
        f"({(idle['open'] - idle['closed']) / 10:+.2f}% of a core); under load"
        if idle
        else "Under load"
    )
    return (
        f"{machine.line()}; every process of one embedded mesh, {result['requests']} GetHome "
        f"calls x {result['rounds']} interleaved rounds, {result['concurrency']} in flight, "
        "the console polled once a second while open.\n\n"
        + markdown_table(
            ("console", "idle, mesh CPU ms/s", "under load, mesh CPU ms per GetHome", "by round"),
            rows,
        )
        + f"\n{cost} **{result['change']:+.1%}** per GetHome (open against closed).\n"
        + f"\nReproduce: `{command}`\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument(
        "--results", type=Path, default=None, help="rewrite this results page's measured block"
    )
    args = parser.parse_args(argv)
    result = run(args.requests, args.concurrency, args.rounds, args.idle_s)
    print(json.dumps(result, indent=2))
    if args.results is not None:
        command = (
            f"python -m grpc_resilience_mesh.bench.console_cpu --requests {args.requests} "
            f"--concurrency {args.concurrency} --rounds {args.rounds} --idle-s {args.idle_s:g}"
        )
        block = results_block(result, Machine.now(), command)
        rewrite(args.results, "The console's CPU cost", block)
        print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
