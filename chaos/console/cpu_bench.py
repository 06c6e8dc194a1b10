"""The mesh's CPU per GetHome with the console open (polled once a second, as the page does)
and closed, in interleaved rounds on one embedded mesh: `python -m chaos.console.cpu_bench`.

Measured as `mesh bench mesh` measures (chaos.bench.mesh.measure: a fresh load client, CPU
from /proc of every process around the window), over every process of the mesh (services,
replicas, Toxiproxy, redis, SMTP sink), not only GetHome's path: the console scrapes them all.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

from chaos.bench.mesh import Window, measure
from chaos.console.server import ConsoleServer
from chaos.launch.mesh import Mesh
from chaos.launch.ports import Ports


def _poll(url: str, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        with urllib.request.urlopen(url + "api/state", timeout=10) as response:
            response.read()


def run(requests: int, concurrency: int, rounds: int) -> dict[str, Any]:
    windows: dict[str, list[Window]] = {"closed": [], "open": []}
    with tempfile.TemporaryDirectory(prefix="console-cpu-") as tmp:
        mesh = Mesh(state_dir=Path(tmp), ports=Ports.auto(), direct=False, policy="full")
        state = mesh.start()
        server = ConsoleServer(state).start()
        try:
            pids = {p.name: p.popen.pid for p in mesh.procs}
            for _ in range(rounds):
                for variant in ("closed", "open"):
                    stop = threading.Event()
                    poller = threading.Thread(target=_poll, args=(server.url, stop), daemon=True)
                    if variant == "open":
                        poller.start()
                    try:
                        windows[variant].append(
                            measure(
                                state.gateway,
                                pids,
                                requests=requests,
                                concurrency=concurrency,
                                api_key=state.api_key,
                                warmup=200,
                            )
                        )
                    finally:
                        stop.set()
                        if poller.is_alive():
                            poller.join()
        finally:
            server.close()
            mesh.stop()
    out: dict[str, Any] = {"requests": requests, "rounds": rounds}
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
    out["change"] = (
        out["open"]["mesh_cpu_ms_per_request"] / out["closed"]["mesh_cpu_ms_per_request"] - 1
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(args.requests, args.concurrency, args.rounds), indent=2))


if __name__ == "__main__":
    main()
