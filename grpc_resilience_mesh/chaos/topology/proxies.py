"""The run's Toxiproxy: the embedded one started as a child process (its own per-run API
token), or a real one at a URL; a proxy per edge; the faults' toxics applied and removed.

The embedded server runs as a child, not in the runner's process, so that a runner that hangs
leaves a server that can still drop the faults when their lease lapses (chaos/topology/lease.py);
a runner that dies, even by SIGKILL, takes it along (launch/parent_death.py), as it does the
services it started."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from grpc_resilience_mesh.chaos.topology.experiment_model import FaultSpec
from grpc_resilience_mesh.chaos.topology.model import Topology
from grpc_resilience_mesh.chaos.topology.wiring import LOOPBACK, Wiring
from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.launch.parent_death import dies_with_parent
from grpc_resilience_mesh.launch.processes import (
    ChildProcess,
    LaunchError,
    http_answers,
    terminate,
    wait_ready,
)

EMBEDDED_READY_S = 15.0


class ProxyError(RuntimeError):
    """The Toxiproxy could not be started or reached, or refused a proxy."""


class ProxySet:
    """One proxy per edge on one Toxiproxy; `stop()` is safe at any point, twice."""

    def __init__(self, topo: Topology, wiring: Wiring, log_dir: Path, api_port: int) -> None:
        self.topo = topo
        self.wiring = wiring
        self.log_dir = log_dir
        self.embedded = topo.toxiproxy == "embedded"
        self.url = f"http://{LOOPBACK}:{api_port}" if self.embedded else topo.toxiproxy
        self.token = secrets.token_urlsafe(24) if self.embedded else None
        self.client = ToxiproxyClient(self.url, timeout_s=5.0, token=self.token)
        self.child: ChildProcess | None = None
        self.created: list[str] = []
        self.applied: list[tuple[str, str]] = []

    @classmethod
    def attached(cls, topo: Topology, wiring: Wiring, url: str, token: str | None) -> ProxySet:
        """The proxies of a topology another process holds up (`mesh topology up`), for faults
        on and off: this process neither started them nor stops them."""
        proxies = cls(topo, wiring, Path("."), 0)
        proxies.url, proxies.token = url, token
        proxies.client = ToxiproxyClient(url, timeout_s=5.0, token=token)
        proxies.created = [e.name for e in topo.edges]
        return proxies

    def start(self) -> None:
        """The server (embedded: started; real: asked for its version), then every proxy."""
        if self.embedded:
            self._spawn_embedded()
        try:
            self.client.version()
            for edge in self.topo.edges:
                self._create(edge.name)
        except ToxiproxyError as err:
            raise ProxyError(f"toxiproxy {self.url}: {err.message}") from None

    def _spawn_embedded(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        port = self.url.rpartition(":")[2]
        args = [sys.executable, "-m", "grpc_resilience_mesh.embedded_toxiproxy"]
        log_path = self.log_dir / "toxiproxy.log"
        assert self.token is not None
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                [*args, "--host", LOOPBACK, "--port", port],
                env={**os.environ, TOKEN_ENV: self.token},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=dies_with_parent(),  # a runner killed with SIGKILL ends it too
            )
        self.child = ChildProcess("toxiproxy", popen, log_path, supervised=False)
        try:
            wait_ready(
                self.child, lambda: http_answers(f"{self.url}/version"), "answer", EMBEDDED_READY_S
            )
        except LaunchError as err:
            raise ProxyError(f"embedded toxiproxy: {err}") from None

    def _create(self, name: str) -> None:
        if not self.embedded and name in self.client.proxies():
            self.client.delete_proxy(name)  # one left by a run that died: replaced
        self.client.create_proxy(name, self.wiring.proxies[name], self.wiring.upstreams[name])
        self.created.append(name)

    def add(self, fault: FaultSpec, index: int) -> str:
        """Apply one toxic fault; its name, for removal."""
        assert fault.edge is not None and fault.toxic is not None
        name = f"chaos_{index}_{fault.toxic}_{fault.stream}"
        self.client.add_toxic(
            fault.edge, fault.toxic, fault.stream, fault.toxicity, dict(fault.attributes), name
        )
        self.applied.append((fault.edge, name))
        return name

    def remove_all(self) -> list[str]:
        """Remove every toxic this run applied; the ones that could not be removed, said why."""
        failed = []
        while self.applied:
            edge, name = self.applied.pop()
            try:
                self.client.remove_toxic(edge, name)
            except ToxiproxyError as err:
                if err.status != 404:  # already gone (a lease that lapsed): nothing to do
                    failed.append(f"{edge}/{name}: {err.message}")
        return failed

    def toxics_listed(self) -> dict[str, list[str]]:
        """Every toxic on this run's proxies, by edge, as the Toxiproxy lists them now."""
        return {name: [t["name"] for t in self.client.toxics(name)] for name in self.created}

    def stop(self) -> None:
        """Proxies deleted from a real Toxiproxy; the embedded one stopped by its PID."""
        if not self.embedded:
            for name in self.created:
                try:
                    self.client.delete_proxy(name)
                except ToxiproxyError:
                    pass
        if self.child is not None:
            terminate(self.child.popen, grace_s=5.0)
            self.child = None
