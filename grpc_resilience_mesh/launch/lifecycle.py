"""Starting and stopping the mesh's processes: the base of grpc_resilience_mesh.launch.mesh.Mesh.

One mesh per state dir (grpc_resilience_mesh.launch.state_lock); every process started here is
stopped again, by PID, on every exit path. Starting, stopping and replacing processes hold one lock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from grpc_resilience_mesh.client.state import STATE_FILE, MeshState
from grpc_resilience_mesh.launch.log_rotation import LogLimits, LogRotator
from grpc_resilience_mesh.launch.ports import Ports, free_port
from grpc_resilience_mesh.launch.private import private_dir
from grpc_resilience_mesh.launch.processes import (
    GRACE_S,
    ChildProcess,
    LaunchError,
    http_answers,
    smtp_greets,
    wait_ready,
    wait_serving,
)
from grpc_resilience_mesh.launch.spawn import LogSpawner
from grpc_resilience_mesh.launch.state_guard import StateDirInUse, check_state_dir, write_private
from grpc_resilience_mesh.launch.state_lock import StateLock
from grpc_resilience_mesh.launch.wiring import Security, Wiring, prepare_security
from grpc_resilience_mesh.launch.xds_plane import XdsPlane
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.policy.loading import PolicyError, load_policy
from grpc_resilience_mesh.services.runtime.tls import PLAINTEXT_LISTENERS
from grpc_resilience_mesh.services.topology import INSTANCES, ServiceSpec, service, xds_edges


class MeshProcesses:
    """The embedded mesh's processes: Redis, the SMTP sink, Toxiproxy (unless direct) and the
    services, started in that order and stopped callers first."""

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
        xds: XdsPlane | None = None,
    ) -> None:
        self.state_dir = state_dir.resolve()
        self.ports = ports or Ports.default()
        self.direct = direct
        self.policy = policy
        self.env = dict(env or {})
        self.service_env = {k: dict(v) for k, v in (service_env or {}).items()}
        self.start_timeout_s = start_timeout_s
        self.xds = xds
        """With `mesh up --xds`: the control plane, started before the services."""
        self.api_key: str | None = None
        """The key `mesh call` and the load send; generated per start unless configured."""
        self.tls_dir: Path | None = None
        self.admin_token: str | None = None
        """What the admin ports and Toxiproxy's API require; generated per start unless set."""
        self.internal_token: str | None = None
        """What the services behind the gateway require of their callers; likewise per start."""
        self.control: str | None = None
        """Where a supervisor listens for `mesh restart` (recorded in mesh.json), if any."""
        self.procs: list[ChildProcess] = []
        self.state: MeshState | None = None
        self.started_ns = 0
        """When start() began (time.time_ns()): mesh.json's mark between this run's spans and
        an earlier run's in the same traces dir."""
        self._generated_key: str | None = None
        self._lock = threading.RLock()
        self._state_lock = StateLock(self.state_dir)
        self._stopping = threading.Event()
        self._spawn = LogSpawner(self.state_dir).spawn
        self._rotator: LogRotator | None = None
        """Start one process with its log (tests start stand-ins through it too)."""

    @property
    def wiring(self) -> Wiring:
        """The addresses and settings as they are now (a variant may switch `direct`)."""
        return Wiring(
            self.ports,
            self.state_dir,
            self.direct,
            self.env,
            self.service_env,
            self.xds,
            self.started_ns,
        )

    @property
    def _security(self) -> Security:
        return Security(
            self.api_key, self._generated_key, self.tls_dir, self.admin_token, self.internal_token
        )

    @property
    def toxiproxy_url(self) -> str | None:
        return self.wiring.toxiproxy_url

    @property
    def gateway(self) -> str:
        return self.wiring.gateway

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def proxy_config(self) -> list[dict[str, object]]:
        return self.wiring.proxy_config()

    def lock(self) -> None:
        """Claim the state dir for this mesh (idempotent; stop() releases it). Raises StateDirInUse,
        naming the other mesh, before creating or changing any file but the state dir itself and its
        lock file; StateDirRefused, before even that, for a state dir another user owns or may
        write, or with a link in it (grpc_resilience_mesh.launch.state_guard)."""
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_state_dir(self.state_dir)
        owner = {"pid": os.getpid(), "gateway": self.gateway, "state_dir": str(self.state_dir)}
        holder = self._state_lock.try_acquire(owner)
        if holder is not None:
            raise StateDirInUse(self.state_dir, holder)
        private_dir(self.state_dir)

    def _launch(self, name: str, note: str | None = None) -> ChildProcess:
        """Spawn one of the mesh's own processes, not waiting for it: its ports, the current
        policy. Not registered in `procs`: the caller places it."""
        args, env, python = self.wiring.command(name, self.policy, self._security)
        return self._spawn(name, args, env, python, note=note)

    def _wait_serving(self, spec: ServiceSpec, env: Mapping[str, str], proc: ChildProcess) -> None:
        tls = self.tls_dir if spec.name not in PLAINTEXT_LISTENERS else None
        wait_serving(env["LISTEN_ADDR"], self.start_timeout_s, proc, tls, abort=self._stopping)

    def _await_ready(self, proc: ChildProcess) -> None:
        """Block until `proc` does its job: PONG, an SMTP greeting, the Toxiproxy API, SERVING."""
        name, timeout_s, abort = proc.name, self.start_timeout_s, self._stopping
        addr = self.wiring.listen(name)
        if name == "redis":
            from grpc_resilience_mesh.launch.redis_server import ping

            wait_ready(proc, lambda: ping(addr), f"answer PING at {addr}", timeout_s, abort)
        elif name == "smtp":
            wait_ready(proc, lambda: smtp_greets(addr), f"greet at {addr}", timeout_s, abort)
        elif name == "toxiproxy":
            url = f"{self.toxiproxy_url}/version"
            wait_ready(proc, lambda: http_answers(url), f"answer at {url}", timeout_s, abort)
        elif name == "xds" and self.xds is not None:
            url = f"{self.xds.admin_url}/healthz"
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
        self.started_ns = time.time_ns()
        try:
            self._rotate_logs()
            with self._lock:
                security = prepare_security(self.env, self.state_dir)
                self.api_key, self.tls_dir = security.api_key, security.tls_dir
                self._generated_key = security.generated_key
                self.admin_token = security.admin_token
                self.internal_token = security.internal_token
                self._add("redis")  # the receipt queue and the SMTP sink, ready before
                self._add("smtp")  # anything calls them
                if not self.direct:
                    config = self.state_dir / "toxiproxy.json"
                    write_private(config, json.dumps(self.proxy_config(), indent=2).encode())
                    self._add("toxiproxy")
                if self.xds is not None:
                    self.write_xds()
                    self._add("xds")
                self._start_services()
                self._save_state()
        except BaseException:
            self.stop()
            raise
        assert self.state is not None
        return self.state

    def write_xds(self) -> None:
        """The control plane's file for the current policy (it pushes the change itself)."""
        if self.xds is None:
            return
        wiring = self.wiring
        try:
            policy = load_policy(self.policy, {**os.environ, **self.env})
        except PolicyError as err:
            raise LaunchError(f"--xds: {err}") from None
        self.xds.write(policy, {e.name: wiring.dependency_addr(e) for e in xds_edges()})

    def _rotate_logs(self) -> None:
        """Keep logs/ bounded while the mesh runs (grpc_resilience_mesh.launch.log_rotation)."""
        try:
            limits = LogLimits.from_env({**os.environ, **self.env})
        except ConfigError as err:
            raise LaunchError(str(err)) from None
        if self._rotator is None:
            self._rotator = LogRotator(self.state_dir / "logs", limits)
            self._rotator.start()

    def _start_services(self) -> None:
        """Every service but the gateway at once (none needs another to become ready), then
        the gateway, whose start-up warms its popular-items cache from recommendation."""
        waves = (
            [s for s in INSTANCES if s.name != "gateway"],
            [s for s in INSTANCES if s.name == "gateway"],
        )
        for wave in waves:
            started = [self._launch(spec.name) for spec in wave]
            self.procs.extend(started)
            for proc in started:
                self._await_ready(proc)

    def _save_state(self) -> None:
        """Describe the mesh as it runs now and write mesh.json (owner-only)."""
        pids = {p.name: p.popen.pid for p in self.procs}
        security = self._security
        self.state = self.wiring.describe(
            pids, self.policy, self.api_key, self.control, *security.tokens
        )
        self.state.save(self.state_dir)

    def start_worker(self, name: str, env: Mapping[str, str], module: str | None = None) -> int:
        """One more receipt worker (experiments crash it); stopped with the mesh, never
        restarted by a supervisor. `module`: run instead of the service's own (the job
        experiments' drill worker). Its PID."""
        spec = service("notification")
        worker_env = {
            **self.wiring.service_env(spec, self.policy, self._security),
            "LISTEN_ADDR": f"127.0.0.1:{free_port()}",
            "ADMIN_ADDR": f"127.0.0.1:{free_port()}",
            "METRICS_ADDR": f"127.0.0.1:{free_port()}",
            **env,
        }
        with self._lock:
            if any(p.name == name and p.popen.poll() is None for p in self.procs):
                raise LaunchError(f"a worker named {name} is already running")
            # A dead worker of that name (an earlier run of the same experiment) gives way.
            self.procs = [p for p in self.procs if p.name != name]
            proc = self._spawn(name, ["-m", module or spec.module], worker_env, supervised=False)
            self.procs.append(proc)
        # Outside the lock: workers started side by side wait for their imports together.
        self._wait_serving(spec, worker_env, proc)
        return proc.popen.pid

    def stop(self, timeout_s: float = GRACE_S) -> dict[str, int | None]:
        """SIGTERM every process (callers first), wait, SIGKILL what is left; return codes.
        Removes mesh.json and releases the state dir if this mesh holds it. Idempotent."""
        self._stopping.set()
        if self._rotator is not None:
            self._rotator.stop()
            self._rotator = None
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

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
