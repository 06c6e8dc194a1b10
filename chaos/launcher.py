"""Start the mesh as local processes (services behind the embedded Toxiproxy) and stop it.

Used by `mesh up`, the experiment runner and the end-to-end tests. Every process it starts
it also stops, by PID, on every exit path.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from mesh.runtime.topology import EDGES, SERVICES, TOXIPROXY_API_PORT, Edge, ServiceSpec

STATE_FILE = "mesh.json"


class LaunchError(RuntimeError):
    """A process of the mesh failed to start; the message carries its own error output."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Ports:
    """Every port the embedded mesh uses; `auto()` picks free ones (for tests and CI)."""

    listen: dict[str, int]
    admin: dict[str, int]
    metrics: dict[str, int]
    proxies: dict[str, int]
    toxiproxy_api: int

    @classmethod
    def default(cls, gateway_port: int | None = None) -> Ports:
        listen = {s.name: s.port for s in SERVICES}
        if gateway_port:
            listen["gateway"] = gateway_port
        return cls(
            listen=listen,
            admin={s.name: s.admin_port for s in SERVICES},
            metrics={s.name: s.metrics_port for s in SERVICES},
            proxies={e.proxy_name: e.proxy_port for e in EDGES},
            toxiproxy_api=TOXIPROXY_API_PORT,
        )

    @classmethod
    def auto(cls) -> Ports:
        return cls(
            listen={s.name: free_port() for s in SERVICES},
            admin={s.name: free_port() for s in SERVICES},
            metrics={s.name: free_port() for s in SERVICES},
            proxies={e.proxy_name: free_port() for e in EDGES},
            toxiproxy_api=free_port(),
        )


@dataclass
class MeshState:
    """What a running mesh tells other commands (`mesh call`, `mesh chaos --target`)."""

    gateway: str
    toxiproxy: str | None
    services: dict[str, dict[str, str]]
    proxies: dict[str, dict[str, str]]
    pids: dict[str, int]
    policy: str
    state_dir: str
    api_key: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def save(self, state_dir: Path) -> Path:
        path = state_dir / STATE_FILE
        path.write_text(json.dumps(asdict(self), indent=2))
        return path

    @classmethod
    def load(cls, state_dir: Path) -> MeshState | None:
        path = state_dir / STATE_FILE
        if not path.exists():
            return None
        return cls(**json.loads(path.read_text()))


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no output)"
    return "\n".join(text[-lines:]) or "(no output)"


def wait_serving(addr: str, timeout_s: float, proc: _Proc | None = None) -> None:
    """Block until `addr` answers grpc.health.v1 Check with SERVING."""
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(addr) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            if proc is not None and proc.popen.poll() is not None:
                raise LaunchError(
                    f"{proc.name} exited with code {proc.popen.returncode} during start-up:\n"
                    f"{_log_tail(proc.log_path)}"
                )
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if time.monotonic() > deadline:
                name = proc.name if proc else addr
                tail = _log_tail(proc.log_path) if proc else ""
                raise LaunchError(f"{name} did not report SERVING within {timeout_s:.0f} s\n{tail}")
            time.sleep(0.05)


def _wait_http(url: str, timeout_s: float, proc: _Proc) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        if proc.popen.poll() is not None:
            raise LaunchError(f"toxiproxy exited with code {proc.popen.returncode}:\n"
                              f"{_log_tail(proc.log_path)}")
        try:
            with urllib.request.urlopen(url + "/version", timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise LaunchError(f"toxiproxy did not answer at {url} within {timeout_s:.0f} s")
            time.sleep(0.05)


class Mesh:
    """The embedded mesh: toxiproxy (unless direct) and the four services, as processes."""

    def __init__(
        self,
        *,
        state_dir: Path = Path("var"),
        ports: Ports | None = None,
        direct: bool = False,
        policy: str = "full",
        env: Mapping[str, str] | None = None,
        service_env: Mapping[str, Mapping[str, str]] | None = None,
        start_timeout_s: float = 30.0,
    ) -> None:
        self.state_dir = state_dir.resolve()
        self.ports = ports or Ports.default()
        self.direct = direct
        self.policy = policy
        self.env = dict(env or {})
        self.service_env = {k: dict(v) for k, v in (service_env or {}).items()}
        self.start_timeout_s = start_timeout_s
        self.procs: list[_Proc] = []
        self.state: MeshState | None = None

    @property
    def toxiproxy_url(self) -> str | None:
        return None if self.direct else f"http://127.0.0.1:{self.ports.toxiproxy_api}"

    def _spawn(self, name: str, args: list[str], env: Mapping[str, str]) -> _Proc:
        log_dir = self.state_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{name}.log"
        with log_path.open("wb") as log:
            popen = subprocess.Popen(
                [sys.executable, *args],
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        proc = _Proc(name, popen, log_path)
        self.procs.append(proc)
        return proc

    def proxy_config(self) -> list[dict[str, object]]:
        return [
            {
                "name": e.proxy_name,
                "listen": f"127.0.0.1:{self.ports.proxies[e.proxy_name]}",
                "upstream": f"127.0.0.1:{self.ports.listen[e.callee]}",
                "enabled": True,
            }
            for e in EDGES
        ]

    def _dependency_addr(self, edge: Edge) -> str:
        port = self.ports.listen[edge.callee] if self.direct else self.ports.proxies[edge.proxy_name]
        return f"127.0.0.1:{port}"

    def _service_env(self, spec: ServiceSpec) -> dict[str, str]:
        env = {
            "LISTEN_ADDR": f"127.0.0.1:{self.ports.listen[spec.name]}",
            "ADMIN_ADDR": f"127.0.0.1:{self.ports.admin[spec.name]}",
            "METRICS_ADDR": f"127.0.0.1:{self.ports.metrics[spec.name]}",
            "MESH_POLICY": self.policy,
            "PAYMENT_DB_PATH": str(self.state_dir / "payment" / "ledger.sqlite3"),
            "MESH_TRACES_DIR": str(self.state_dir / "traces"),
            "OTEL_SERVICE_NAME": spec.name,
            **self.env,
        }
        for e in EDGES:
            if e.caller == spec.name:
                env[e.addr_env] = self._dependency_addr(e)
        env.update(self.service_env.get(spec.name, {}))
        return env

    def start(self) -> MeshState:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            if not self.direct:
                config = self.state_dir / "toxiproxy.json"
                config.write_text(json.dumps(self.proxy_config(), indent=2))
                proc = self._spawn("toxiproxy", [
                    "-m", "chaos.cli", "toxiproxy", "--host", "127.0.0.1",
                    "--port", str(self.ports.toxiproxy_api), "--config", str(config),
                ], {})
                assert self.toxiproxy_url
                _wait_http(self.toxiproxy_url, self.start_timeout_s, proc)
            for spec in SERVICES:
                env = self._service_env(spec)
                proc = self._spawn(spec.name, ["-m", spec.module], env)
                wait_serving(env["LISTEN_ADDR"], self.start_timeout_s, proc)
        except BaseException:
            self.stop()
            raise
        self.state = self._describe()
        self.state.save(self.state_dir)
        return self.state

    def _describe(self) -> MeshState:
        return MeshState(
            gateway=f"127.0.0.1:{self.ports.listen['gateway']}",
            toxiproxy=self.toxiproxy_url,
            services={
                s.name: {
                    "listen": f"127.0.0.1:{self.ports.listen[s.name]}",
                    "admin": f"127.0.0.1:{self.ports.admin[s.name]}",
                    "metrics": f"http://127.0.0.1:{self.ports.metrics[s.name]}/metrics",
                }
                for s in SERVICES
            },
            proxies={
                e.proxy_name: {
                    "listen": self._dependency_addr(e),
                    "upstream": f"127.0.0.1:{self.ports.listen[e.callee]}",
                }
                for e in EDGES
            },
            pids={p.name: p.popen.pid for p in self.procs},
            policy=self.policy,
            state_dir=str(self.state_dir),
            api_key=self.env.get("MESH_API_KEYS"),
        )

    def restart_service(self, name: str, sig: signal.Signals = signal.SIGTERM) -> int:
        """Stop one service with `sig` (SIGKILL for a crash), start it again; return the new PID."""
        from mesh.runtime.topology import service

        spec = service(name)
        proc = next(p for p in self.procs if p.name == name)
        if proc.popen.poll() is None:
            proc.popen.send_signal(sig)
            proc.popen.wait(15)
        self.procs.remove(proc)
        env = self._service_env(spec)
        new = self._spawn(spec.name, ["-m", spec.module], env)
        wait_serving(env["LISTEN_ADDR"], self.start_timeout_s, new)
        if self.state is not None:
            self.state.pids[name] = new.popen.pid
            self.state.save(self.state_dir)
        return new.popen.pid

    def restart_services(self, policy: str) -> None:
        """Stop every service, then start them again under `policy` (Toxiproxy keeps running).

        How an experiment switches between its variants: each variant starts from fresh
        breakers, budgets and caches, as after a deploy.
        """
        services = [p for p in self.procs if p.name != "toxiproxy"]
        for proc in reversed(services):
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        for proc in services:
            try:
                proc.popen.wait(15)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait()
            self.procs.remove(proc)
        self.policy = policy
        try:
            for spec in SERVICES:
                env = self._service_env(spec)
                new = self._spawn(spec.name, ["-m", spec.module], env)
                wait_serving(env["LISTEN_ADDR"], self.start_timeout_s, new)
        except BaseException:
            self.stop()
            raise
        self.state = self._describe()
        self.state.save(self.state_dir)

    def alive(self) -> list[str]:
        return [p.name for p in self.procs if p.popen.poll() is None]

    def stop(self, timeout_s: float = 10.0) -> dict[str, int | None]:
        """SIGTERM every process (callers first), wait, SIGKILL what is left; return codes."""
        for proc in reversed(self.procs):
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        codes: dict[str, int | None] = {}
        for proc in self.procs:
            try:
                codes[proc.name] = proc.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                codes[proc.name] = proc.popen.wait()
        self.procs.clear()
        state_path = self.state_dir / STATE_FILE
        if state_path.exists():
            state_path.unlink()
        return codes

    def __enter__(self) -> Mesh:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def running_mesh(**kwargs: object) -> Iterator[Mesh]:
    mesh = Mesh(**kwargs)  # type: ignore[arg-type]
    with mesh:
        yield mesh
