"""The floor of `mesh bench mesh`: GetHome's call graph on bare grpc.aio, as processes.

Gateway, recommendation and profile run their own servicer classes (the same `build()` each
service's __main__ runs), each on a bare `grpc.aio.server()` with no interceptors, no
proxies, no tracing, metrics or admin port, and plain insecure channels between them. What
is left is the services' business logic plus grpc.aio itself: what the mesh is measured
against. The floor runs the mesh's replicas too (topology.REPLICAS: two profile and two
recommendation processes), balanced by gRPC's own round_robin over an `ipv4:` target, so
both sides of the ratio pay for the same processes and the same balancing.

`python -m grpc_resilience_mesh.bench.plain_mesh --service NAME --listen ADDR [--profile ADDR]
[--recommendation ADDR]`; PlainMesh starts the three and stops them by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from grpc_resilience_mesh.services.topology import replica_of

FLOOR_SERVICES = ("profile", "recommendation", "gateway")
"""GetHome's call graph, callees first (each must serve before its caller starts)."""


def floor_instances() -> tuple[str, ...]:
    """Every floor process, as the mesh names its replicas: callees (every replica) first."""
    from grpc_resilience_mesh.services.topology import replicas

    return tuple(spec.name for name in FLOOR_SERVICES for spec in replicas(name))


def _bare_runtime(name: str, deps: dict[str, str]) -> Any:
    """A Runtime whose channels are plain grpc.aio channels (no resilience interceptor) and
    whose edges do not retry; config, policy, event bus and metrics exist but nothing
    listens to the bus and nothing serves the metrics."""
    from prometheus_client import CollectorRegistry

    from grpc_aio_resilience import EventBus
    from grpc_resilience_mesh.services.faults.injection import FaultTable
    from grpc_resilience_mesh.services.policy.loading import load_policy
    from grpc_resilience_mesh.services.runtime.config import ServiceConfig
    from grpc_resilience_mesh.services.runtime.edges import Edges
    from grpc_resilience_mesh.services.runtime.server import Runtime
    from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics

    env = {
        "MESH_POLICY": "unprotected",
        "MESH_AUTH": "off",  # the floor has no interceptors: no API key, no rate limit
        **{f"{k.upper()}_ADDR": v for k, v in deps.items()},
    }

    class BareEdges(Edges):
        """Edges without interceptors: a plain round-robin channel each (never retried)."""

        def _channel(self, dependency: str, interceptor: Any, policy: Any) -> grpc.aio.Channel:
            from grpc_aio_resilience import ROUND_ROBIN, balanced_target

            addresses = self.wiring.addresses[dependency].split(",")
            target = balanced_target(addresses) or addresses[0]
            options = [("grpc.service_config", json.dumps(ROUND_ROBIN))]
            return grpc.aio.insecure_channel(target, options=options)

    class BareRuntime(Runtime):
        def __post_init__(self) -> None:
            self.edges = BareEdges(self.edge_wiring())

    return BareRuntime(
        ServiceConfig.from_env(name, env),
        load_policy("unprotected", env),
        EventBus(),
        FaultTable(),
        MeshMetrics(CollectorRegistry(), service=name),
        environ=env,
    )


async def serve_plain(name: str, listen: str, deps: dict[str, str]) -> None:
    """Serve `name`'s servicer on a bare grpc.aio server at `listen` until SIGTERM."""
    from grpc_resilience_mesh.bench.serving import serve_until_terminated

    module = importlib.import_module(f"grpc_resilience_mesh.services.{name}.servicer")
    build: Callable[[Any], Awaitable[Any]] = module.build
    runtime = _bare_runtime(name, deps)
    built = await build(runtime)
    server = grpc.aio.server()
    built.register(server)
    await serve_until_terminated(server, listen, name)
    await runtime.edges.close()
    if built.close is not None:
        await built.close()


class PlainMesh:
    """The floor processes (every replica) on the given ports, keyed by instance name
    (`floor_instances()`); started callees first, stopped by PID."""

    def __init__(self, ports: dict[str, int], log_dir: Path, start_timeout_s: float = 30.0):
        self.ports = ports
        self.log_dir = log_dir
        self.start_timeout_s = start_timeout_s
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def gateway(self) -> str:
        return f"127.0.0.1:{self.ports['gateway']}"

    def pids(self) -> dict[str, tuple[int, ...]]:
        """Each service's processes, every replica under its service's name."""
        by_role: dict[str, list[int]] = {}
        for instance, popen in self.procs.items():
            by_role.setdefault(replica_of(instance), []).append(popen.pid)
        return {name: tuple(pids) for name, pids in by_role.items()}

    def _addresses(self, service: str) -> str:
        """Every replica of `service`, comma-separated, as `<DEP>_ADDR` lists them."""
        from grpc_resilience_mesh.services.topology import replicas

        return ",".join(f"127.0.0.1:{self.ports[spec.name]}" for spec in replicas(service))

    def start(self) -> None:
        from grpc_resilience_mesh.launch.processes import ChildProcess, wait_serving

        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            for instance in floor_instances():
                name = replica_of(instance)
                addr = f"127.0.0.1:{self.ports[instance]}"
                deps = [
                    arg
                    for callee in ("profile", "recommendation")
                    if callee != name and FLOOR_SERVICES.index(callee) < FLOOR_SERVICES.index(name)
                    for arg in (f"--{callee}", self._addresses(callee))
                ]
                log_path = self.log_dir / f"plain-{instance}.log"
                with log_path.open("wb") as log:
                    popen = subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            __name__,
                            "--service",
                            name,
                            "--listen",
                            addr,
                            *deps,
                        ],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                self.procs[instance] = popen
                child = ChildProcess(f"plain-{instance}", popen, log_path, {})
                wait_serving(addr, self.start_timeout_s, child, None)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for popen in reversed(list(self.procs.values())):
            if popen.poll() is None:
                popen.send_signal(signal.SIGTERM)
        for popen in self.procs.values():
            try:
                popen.wait(10)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
        self.procs.clear()

    def __enter__(self) -> PlainMesh:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--service", required=True, choices=FLOOR_SERVICES)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--profile")
    parser.add_argument("--recommendation")
    args = parser.parse_args(argv)
    deps = {k: v for k in ("profile", "recommendation") if (v := getattr(args, k))}
    if args.service == "gateway":
        deps.setdefault("payment", "127.0.0.1:9")  # never called by GetHome
    asyncio.run(serve_plain(args.service, args.listen, deps))


if __name__ == "__main__":
    main()
