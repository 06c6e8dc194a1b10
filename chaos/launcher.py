"""Start the mesh as local processes (services behind the embedded Toxiproxy) and stop it.

Used by `mesh up`, the experiment runner and the end-to-end tests. Every process it starts
it also stops, by PID, on every exit path.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mesh.runtime.tls import CA_CERT, PLAINTEXT_LISTENERS, tls_enabled
from mesh.runtime.topology import (
    EDGES,
    PEERS,
    SERVICES,
    TOXIPROXY_API_PORT,
    Edge,
    ServiceSpec,
)

STATE_FILE = "mesh.json"


class LaunchError(RuntimeError):
    """A process of the mesh failed to start; the message carries its own error output."""


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports on 127.0.0.1 (all held open until every one is chosen)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


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
        listen = {s.name: s.port for s in (*SERVICES, *PEERS)}
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
        """Free ports, all different: every one stays bound until all are picked (ports picked
        one at a time can come back twice, and two proxies on one port break an edge)."""
        names = [
            *(("listen", s.name) for s in (*SERVICES, *PEERS)),
            *(("admin", s.name) for s in SERVICES),
            *(("metrics", s.name) for s in SERVICES),
            *(("proxies", e.proxy_name) for e in EDGES),
            ("api", "toxiproxy"),
        ]
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        table: dict[str, dict[str, int]] = {"listen": {}, "admin": {}, "metrics": {}, "proxies": {}}
        for (kind, name), port in ports.items():
            if kind != "api":
                table[kind][name] = port
        return cls(**table, toxiproxy_api=ports[("api", "toxiproxy")])


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


def health_channel(addr: str, tls_dir: Path | None = None, name: str = "") -> grpc.Channel:
    """A blocking channel for probes: TLS (verifying `name` against the mesh CA) if `tls_dir`."""
    if tls_dir is None:
        return grpc.insecure_channel(addr)
    creds = grpc.ssl_channel_credentials((tls_dir / CA_CERT).read_bytes())
    return grpc.secure_channel(addr, creds, options=[("grpc.ssl_target_name_override", name)])


def wait_serving(
    addr: str, timeout_s: float, proc: _Proc | None = None, tls_dir: Path | None = None
) -> None:
    """Block until `addr` answers grpc.health.v1 Check with SERVING (over TLS if `tls_dir`)."""
    deadline = time.monotonic() + timeout_s
    with health_channel(addr, tls_dir, proc.name if proc else "") as channel:
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


def _first_key(path: Path) -> str | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    return next((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), None)


def _wait_tcp(addr: str, timeout_s: float, proc: _Proc) -> None:
    host, _, port = addr.rpartition(":")
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.popen.poll() is not None:
            raise LaunchError(
                f"{proc.name} exited with code {proc.popen.returncode}:\n{_log_tail(proc.log_path)}"
            )
        try:
            with socket.create_connection((host, int(port)), timeout=0.5) as sock:
                if sock.recv(3) == b"220":
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise LaunchError(f"{proc.name} did not greet at {addr} within {timeout_s:.0f} s")
        time.sleep(0.05)


def _wait_http(url: str, timeout_s: float, proc: _Proc) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        if proc.popen.poll() is not None:
            raise LaunchError(
                f"toxiproxy exited with code {proc.popen.returncode}:\n{_log_tail(proc.log_path)}"
            )
        try:
            with urllib.request.urlopen(url + "/version", timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise LaunchError(
                    f"toxiproxy did not answer at {url} within {timeout_s:.0f} s"
                ) from None
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
        self.api_key: str | None = None
        """The key `mesh call` and the load send; generated per start unless configured."""
        self._generated_key: str | None = None
        self.tls_dir: Path | None = None
        self.procs: list[_Proc] = []
        self.state: MeshState | None = None

    @property
    def toxiproxy_url(self) -> str | None:
        return None if self.direct else f"http://127.0.0.1:{self.ports.toxiproxy_api}"

    def _spawn(
        self, name: str, args: list[str], env: Mapping[str, str], python: bool = True
    ) -> _Proc:
        log_dir = self.state_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{name}.log"
        with log_path.open("wb") as log:
            popen = subprocess.Popen(
                [sys.executable, *args] if python else args,
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
        ports = self.ports
        port = ports.listen[edge.callee] if self.direct else ports.proxies[edge.proxy_name]
        return f"127.0.0.1:{port}"

    def _service_env(self, spec: ServiceSpec) -> dict[str, str]:
        env = {
            "LISTEN_ADDR": f"127.0.0.1:{self.ports.listen[spec.name]}",
            "ADMIN_ADDR": f"127.0.0.1:{self.ports.admin[spec.name]}",
            "METRICS_ADDR": f"127.0.0.1:{self.ports.metrics[spec.name]}",
            "MESH_POLICY": self.policy,
            "PAYMENT_DB_PATH": str(self.state_dir / "payment" / "ledger.sqlite3"),
            "MESH_TRACES_DIR": str(self.state_dir / "traces"),
            # Spans reach the files within half a second (the SDK's default is 5 s), so a
            # report written right after an experiment finds its breaker moves there.
            "OTEL_BSP_SCHEDULE_DELAY": "500",
            "OTEL_SERVICE_NAME": spec.name,
            **self.env,
        }
        for e in EDGES:
            if e.caller == spec.name:
                env[e.addr_env] = self._dependency_addr(e)
        if spec.name == "gateway" and self._generated_key:
            env["MESH_API_KEYS"] = self._generated_key
        if self.tls_dir is not None:
            env.update(MESH_TLS="1", MESH_TLS_DIR=str(self.tls_dir))
        env.update(self.service_env.get(spec.name, {}))
        return env

    def _prepare_security(self) -> None:
        """Pick the API key (configured, else a fresh one) and, with MESH_TLS=1, certificates."""
        env = {**os.environ, **self.env}
        self._generated_key = None
        if env.get("MESH_API_KEYS"):
            self.api_key = env["MESH_API_KEYS"].split(",")[0].strip()
        elif env.get("MESH_API_KEYS_FILE"):
            self.api_key = _first_key(Path(env["MESH_API_KEYS_FILE"]))
        else:
            self.api_key = self._generated_key = secrets.token_urlsafe(24)
        self.tls_dir = None
        if tls_enabled(env):
            self.tls_dir = Path(env.get("MESH_TLS_DIR") or self.state_dir / "certs").resolve()
            if not (self.tls_dir / CA_CERT).exists():
                from chaos.cli.certs import write_certs

                write_certs(self.tls_dir)

    def _wait_serving(self, spec: ServiceSpec, env: Mapping[str, str], proc: _Proc) -> None:
        tls = self.tls_dir if spec.name not in PLAINTEXT_LISTENERS else None
        wait_serving(env["LISTEN_ADDR"], self.start_timeout_s, proc, tls)

    def start(self) -> MeshState:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._prepare_security()
        try:
            self._start_peers()
            if not self.direct:
                config = self.state_dir / "toxiproxy.json"
                config.write_text(json.dumps(self.proxy_config(), indent=2))
                proc = self._spawn(
                    "toxiproxy",
                    [
                        "-m",
                        "chaos.cli",
                        "toxiproxy",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.ports.toxiproxy_api),
                        "--config",
                        str(config),
                    ],
                    {},
                )
                assert self.toxiproxy_url
                _wait_http(self.toxiproxy_url, self.start_timeout_s, proc)
            self._start_services()
        except BaseException:
            self.stop()
            raise
        self.state = self._describe()
        self.state.save(self.state_dir)
        return self.state

    def _start_services(self) -> None:
        """Every service but the gateway at once (none needs another to become ready), then
        the gateway, whose start-up warms its popular-items cache from recommendation."""
        waves = (
            [s for s in SERVICES if s.name != "gateway"],
            [s for s in SERVICES if s.name == "gateway"],
        )
        for wave in waves:
            started = []
            for spec in wave:
                env = self._service_env(spec)
                started.append((spec, env, self._spawn(spec.name, ["-m", spec.module], env)))
            for spec, env, proc in started:
                self._wait_serving(spec, env, proc)

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
            api_key=self.api_key,
            extra={
                "redis": f"127.0.0.1:{self.ports.listen['redis']}",
                "smtp": f"127.0.0.1:{self.ports.listen['smtp']}",
                "mailbox": str(self.state_dir / "mailbox"),
            },
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
        self._wait_serving(spec, env, new)
        if self.state is not None:
            self.state.pids[name] = new.popen.pid
            self.state.save(self.state_dir)
        return new.popen.pid

    def record_policy(self, policy: str) -> None:
        """Note a policy the services took on in place (PolicyAdmin), so a later
        restart_service() starts them under it, not under the one the mesh started with."""
        self.policy = policy
        if self.state is not None:
            self.state.policy = policy
            self.state.save(self.state_dir)

    def restart_services(self, policy: str) -> None:
        """Stop every service, then start them again under `policy` (Toxiproxy keeps running).

        How an experiment switches between its variants: each variant starts from fresh
        breakers, budgets and caches, as after a deploy.
        """
        names = {s.name for s in SERVICES}
        services = [p for p in self.procs if p.name in names]
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
            self._start_services()
        except BaseException:
            self.stop()
            raise
        self.state = self._describe()
        self.state.save(self.state_dir)

    def _start_peers(self) -> None:
        """Redis (the receipt queue) and the SMTP sink, ready before anything calls them."""
        from chaos.jobs.redis_server import redis_args, wait_ping

        redis_addr = f"127.0.0.1:{self.ports.listen['redis']}"
        proc = self._spawn(
            "redis",
            redis_args(self.ports.listen["redis"], self.state_dir / "redis"),
            {},
            python=False,
        )
        if not wait_ping(redis_addr, self.start_timeout_s) or proc.popen.poll() is not None:
            raise LaunchError(
                f"redis-server did not answer PING at {redis_addr}:\n{_log_tail(proc.log_path)}"
            )
        smtp_addr = f"127.0.0.1:{self.ports.listen['smtp']}"
        proc = self._spawn(
            "smtp",
            [
                "-m",
                "chaos.jobs.smtp_sink",
                "--listen",
                smtp_addr,
                "--dir",
                str(self.state_dir / "mailbox"),
            ],
            {},
        )
        _wait_tcp(smtp_addr, self.start_timeout_s, proc)

    def start_worker(self, name: str, env: Mapping[str, str]) -> int:
        """One more receipt worker (experiments crash it); stopped with the mesh. Its PID."""
        from mesh.runtime.topology import service

        spec = service("notification")
        worker_env = {
            **self._service_env(spec),
            "LISTEN_ADDR": f"127.0.0.1:{free_port()}",
            "ADMIN_ADDR": f"127.0.0.1:{free_port()}",
            "METRICS_ADDR": f"127.0.0.1:{free_port()}",
            **env,
        }
        proc = self._spawn(name, ["-m", spec.module], worker_env)
        self._wait_serving(spec, worker_env, proc)
        return proc.popen.pid

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> int:
        """Signal one process by name (kill -9 by default) and wait for it; its exit code.
        It stays listed, so restart_service() can bring a mesh service back."""
        proc = next(p for p in self.procs if p.name == name)
        if proc.popen.poll() is None:
            proc.popen.send_signal(sig)
        return proc.popen.wait(15)

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
