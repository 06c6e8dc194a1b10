"""Start the mesh as local processes (services behind the embedded Toxiproxy) and stop it.

Used by `mesh up`, the experiment runner and the end-to-end tests. Every process it starts
it also stops, by PID, on every exit path. One mesh per state dir (chaos.launch.state_lock); its
mesh.json (which holds the API key) is written owner-only. A restarted process keeps its
ports and the current policy, and its log is appended to. Nothing here restarts a process
on its own: `mesh up` adds that (chaos.launch.supervisor), the experiment runner does not.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from chaos.launch.ports import Ports, free_port
from chaos.launch.processes import (
    GRACE_S,
    ChildProcess,
    ProcessStatus,
    describe_exit,
    http_answers,
    log_line,
    smtp_greets,
    terminate,
    wait_ready,
    wait_serving,
)
from chaos.launch.processes import (
    LaunchError as LaunchError,  # re-exported: callers import it from here
)
from chaos.launch.state import STATE_FILE, MeshState, StateDirInUse
from chaos.launch.state_lock import StateLock
from mesh.runtime.tls import CA_CERT, PLAINTEXT_LISTENERS, tls_enabled
from mesh.topology import (
    EDGES,
    SERVICES,
    Edge,
    ServiceSpec,
    service,
)


def _first_key(path: Path) -> str | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    return next((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), None)


class Mesh:
    """The embedded mesh: toxiproxy (unless direct) and the four services, as processes.

    Thread-safe: starting, stopping, killing and restarting processes hold one lock, so a
    supervisor thread and the caller never act on the same process at once.
    """

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
        self.control: str | None = None
        """Where a supervisor listens for `mesh restart` (recorded in mesh.json), if any."""
        self.procs: list[ChildProcess] = []
        self.state: MeshState | None = None
        self._lock = threading.RLock()
        self._state_lock = StateLock(self.state_dir)
        self._stopping = threading.Event()
        self._logs_begun: set[str] = set()

    @property
    def toxiproxy_url(self) -> str | None:
        return None if self.direct else f"http://127.0.0.1:{self.ports.toxiproxy_api}"

    @property
    def gateway(self) -> str:
        return f"127.0.0.1:{self.ports.listen['gateway']}"

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def lock(self) -> None:
        """Claim the state dir for this mesh (idempotent; stop() releases it). Raises
        StateDirInUse, naming the other mesh, before creating or changing any file but the
        state dir itself and its lock file."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        owner = {"pid": os.getpid(), "gateway": self.gateway, "state_dir": str(self.state_dir)}
        holder = self._state_lock.try_acquire(owner)
        if holder is not None:
            raise StateDirInUse(self.state_dir, holder)

    def interrupt(self) -> None:
        """Make a wait for a process to become ready (a restart in progress) give up now:
        the mesh is about to stop. stop() does this too; start() undoes it."""
        self._stopping.set()

    def _spawn(
        self,
        name: str,
        args: list[str],
        env: Mapping[str, str],
        python: bool = True,
        *,
        supervised: bool = True,
        note: str | None = None,
    ) -> ChildProcess:
        """Start one process, its output in logs/<name>.log: truncated on its first start in
        this mesh's life, appended to on every later one (after `note`, a JSON log line)."""
        log_dir = self.state_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{name}.log"
        mode = "ab" if name in self._logs_begun else "wb"
        self._logs_begun.add(name)
        with log_path.open(mode) as log:
            if note:
                log.write(log_line(name, note))
                log.flush()
            popen = subprocess.Popen(
                [sys.executable, *args] if python else args,
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return ChildProcess(name, popen, log_path, dict(env), supervised=supervised)

    def proxy_config(self) -> list[dict[str, object]]:
        return [
            {
                "name": e.name,
                "listen": f"127.0.0.1:{self.ports.proxies[e.name]}",
                "upstream": f"127.0.0.1:{self.ports.listen[e.dependency]}",
                "enabled": True,
            }
            for e in EDGES
        ]

    def _dependency_addr(self, edge: Edge) -> str:
        ports = self.ports
        port = ports.listen[edge.dependency] if self.direct else ports.proxies[edge.name]
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
                from chaos.launch.certs import write_certs

                write_certs(self.tls_dir)

    def _wait_serving(self, spec: ServiceSpec, env: Mapping[str, str], proc: ChildProcess) -> None:
        tls = self.tls_dir if spec.name not in PLAINTEXT_LISTENERS else None
        wait_serving(env["LISTEN_ADDR"], self.start_timeout_s, proc, tls, abort=self._stopping)

    def _launch(self, name: str, note: str | None = None) -> ChildProcess:
        """Spawn one of the mesh's own processes, not waiting for it: its ports, the current
        policy. Not registered in `procs`: the caller places it."""
        listen = f"127.0.0.1:{self.ports.listen.get(name, 0)}"
        if name == "redis":
            from chaos.launch.redis_server import redis_args

            args = redis_args(self.ports.listen["redis"], self.state_dir / "redis")
            return self._spawn(name, args, {}, python=False, note=note)
        if name == "smtp":
            mailbox = str(self.state_dir / "mailbox")
            args = ["-m", "chaos.jobs.smtp_sink", "--listen", listen, "--dir", mailbox]
            return self._spawn(name, args, {}, note=note)
        if name == "toxiproxy":
            api = ["--host", "127.0.0.1", "--port", str(self.ports.toxiproxy_api)]
            config = ["--config", str(self.state_dir / "toxiproxy.json")]
            return self._spawn(name, ["-m", "chaos.cli", "toxiproxy", *api, *config], {}, note=note)
        spec = service(name)
        return self._spawn(name, ["-m", spec.module], self._service_env(spec), note=note)

    def _await_ready(self, proc: ChildProcess) -> None:
        """Block until `proc` does its job: PONG, an SMTP greeting, the Toxiproxy API, SERVING."""
        name, timeout_s, abort = proc.name, self.start_timeout_s, self._stopping
        addr = f"127.0.0.1:{self.ports.listen.get(name, 0)}"
        if name == "redis":
            from chaos.launch.redis_server import ping

            wait_ready(proc, lambda: ping(addr), f"answer PING at {addr}", timeout_s, abort)
        elif name == "smtp":
            wait_ready(proc, lambda: smtp_greets(addr), f"greet at {addr}", timeout_s, abort)
        elif name == "toxiproxy":
            url = f"{self.toxiproxy_url}/version"
            wait_ready(proc, lambda: http_answers(url), f"answer at {url}", timeout_s, abort)
        else:
            self._wait_serving(service(name), proc.env, proc)

    def _add(self, name: str) -> None:
        proc = self._launch(name)
        self.procs.append(proc)
        self._await_ready(proc)

    def start(self) -> MeshState:
        """Lock the state dir, start every process, wait until all are ready, write mesh.json.
        On any failure everything started is stopped again."""
        self.lock()
        self._stopping.clear()
        try:
            with self._lock:
                self._prepare_security()
                self._start_peers()
                if not self.direct:
                    config = self.state_dir / "toxiproxy.json"
                    config.write_text(json.dumps(self.proxy_config(), indent=2))
                    self._add("toxiproxy")
                self._start_services()
                self.state = self._describe()
                self.state.save(self.state_dir)
        except BaseException:
            self.stop()
            raise
        return self.state

    def _start_services(self) -> None:
        """Every service but the gateway at once (none needs another to become ready), then
        the gateway, whose start-up warms its popular-items cache from recommendation."""
        waves = (
            [s for s in SERVICES if s.name != "gateway"],
            [s for s in SERVICES if s.name == "gateway"],
        )
        for wave in waves:
            started = [self._launch(spec.name) for spec in wave]
            self.procs.extend(started)
            for proc in started:
                self._await_ready(proc)

    def _describe(self) -> MeshState:
        return MeshState(
            gateway=self.gateway,
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
                e.name: {
                    "listen": self._dependency_addr(e),
                    "upstream": f"127.0.0.1:{self.ports.listen[e.dependency]}",
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
            owner_pid=os.getpid(),
            control=self.control,
        )

    def components(self) -> list[str]:
        """The names restart_service() can start again: the mesh's own processes."""
        with self._lock:
            return [p.name for p in self.procs if p.supervised]

    def supervised(self) -> list[ProcessStatus]:
        """The mesh's own processes that nobody stopped on purpose (a supervisor's watch list)."""
        with self._lock:
            return [
                ProcessStatus(p.name, p.popen.pid, p.popen.poll(), p.started_at)
                for p in self.procs
                if p.supervised and not p.stopped
            ]

    def restart_service(
        self, name: str, sig: signal.Signals = signal.SIGTERM, grace_s: float = GRACE_S
    ) -> int:
        """Stop one process of the mesh with `sig` (SIGKILL for a crash; SIGKILL anyway once
        `grace_s` has passed), start it again on the same ports under the current policy
        (record_policy), wait until it is ready; the new PID. A process that does not come
        up is killed and LaunchError raised (a supervisor then retries with backoff)."""
        with self._lock:
            if self.stopping:
                raise LaunchError(f"{name}: not restarted, the mesh is stopping")
            old = next((p for p in self.procs if p.name == name and p.supervised), None)
            if old is None:
                known = ", ".join(self.components())
                raise KeyError(f"unknown service {name!r}; this mesh runs: {known}")
            code = terminate(old.popen, sig, grace_s)
            note = f"restarted; the previous process ({old.popen.pid}) {describe_exit(code)}"
            new = self._launch(name, note)
            self.procs[self.procs.index(old)] = new
            try:
                self._await_ready(new)
            except BaseException:
                terminate(new.popen, signal.SIGKILL)
                raise
            if self.state is not None:
                self.state.pids[name] = new.popen.pid
                self.state.save(self.state_dir)
            return new.popen.pid

    def record_policy(self, policy: str) -> None:
        """Note a policy the services took on in place (PolicyAdmin), so a later
        restart_service() starts them under it, not under the one the mesh started with."""
        with self._lock:
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
        with self._lock:
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
        self._add("redis")
        self._add("smtp")

    def start_worker(self, name: str, env: Mapping[str, str]) -> int:
        """One more receipt worker (experiments crash it); stopped with the mesh, never
        restarted by a supervisor. Its PID."""
        spec = service("notification")
        worker_env = {
            **self._service_env(spec),
            "LISTEN_ADDR": f"127.0.0.1:{free_port()}",
            "ADMIN_ADDR": f"127.0.0.1:{free_port()}",
            "METRICS_ADDR": f"127.0.0.1:{free_port()}",
            **env,
        }
        with self._lock:
            proc = self._spawn(name, ["-m", spec.module], worker_env, supervised=False)
            self.procs.append(proc)
            self._wait_serving(spec, worker_env, proc)
            return proc.popen.pid

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> int:
        """Signal one process by name (kill -9 by default) and wait for it; its exit code.
        It stays listed, so restart_service() can bring a mesh service back, and it is
        marked stopped on purpose, so a supervisor does not."""
        with self._lock:
            proc = next(p for p in self.procs if p.name == name)
            proc.stopped = True
            if proc.popen.poll() is None:
                proc.popen.send_signal(sig)
            return proc.popen.wait(15)

    def alive(self) -> list[str]:
        return [p.name for p in self.procs if p.popen.poll() is None]

    def stop(self, timeout_s: float = GRACE_S) -> dict[str, int | None]:
        """SIGTERM every process (callers first), wait, SIGKILL what is left; return codes.
        Removes mesh.json and releases the state dir if this mesh holds it. Idempotent."""
        self._stopping.set()
        with self._lock:
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
            if self._state_lock.held:
                (self.state_dir / STATE_FILE).unlink(missing_ok=True)
                self._state_lock.release()
            return codes

    def __enter__(self) -> Mesh:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
