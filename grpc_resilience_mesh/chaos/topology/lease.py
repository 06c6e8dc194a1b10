"""The dead-man's switch over a run's faults: they last only as long as the runner is alive.

With the embedded Toxiproxy the server holds the lease (grpc_resilience_mesh.embedded_toxiproxy.
leases): renewed every ttl_s/3, it rolls the proxies back once a renewal is missed for ttl_s.
Real Toxiproxy has no leases, so a watchdog process (watchdog.py) plays the server's part,
reading a heartbeat file the runner touches. Either way a runner killed with SIGKILL leaves no
fault behind for longer than ttl_s plus one check (under 5 s with the default 3 s).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType

from grpc_resilience_mesh.chaos.topology.watchdog import RELEASED, armed_path
from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError

log = logging.getLogger("chaos.lease")

ARM_TIMEOUT_S = 10.0
"""How long the watchdog may take to start watching before the lease gives up."""


class LeaseError(RuntimeError):
    """The switch could not be armed: no fault may be injected."""


class FaultLease:
    """A context manager: armed on entry (before any fault), released on exit (after the
    runner's own rollback). `renewals` counts heartbeats sent, `renew_errors` those that
    failed (the embedded server unreachable, say)."""

    def __init__(
        self,
        toxiproxy_url: str,
        proxies: list[str],
        ttl_s: float = 3.0,
        token: str | None = None,
        embedded: bool = True,
    ) -> None:
        if ttl_s <= 0:
            raise ValueError(f"lease ttl_s {ttl_s}: expected > 0")
        self.url = toxiproxy_url
        self.proxies = list(proxies)
        self.ttl_s = ttl_s
        self.embedded = embedded
        self.lease_id = f"chaos-{os.getpid()}-{secrets.token_hex(4)}"
        self.renewals = 0
        self.renew_errors = 0
        self._token = token
        self._client = ToxiproxyClient(toxiproxy_url, timeout_s=max(0.5, ttl_s / 3), token=token)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dir: Path | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def heartbeat(self) -> Path:
        assert self._dir is not None, "the lease is not armed"
        return self._dir / "heartbeat"

    def __enter__(self) -> FaultLease:
        if self.embedded:
            try:
                self._client.put_lease(self.lease_id, self.ttl_s, self.proxies)
            except ToxiproxyError as err:
                raise LeaseError(f"could not take a lease on {self.url}: {err}") from None
        else:
            self._start_watchdog()
        self._thread = threading.Thread(target=self._renew, name="fault-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _beat(self) -> None:
        if self.embedded:
            self._client.put_lease(self.lease_id, self.ttl_s, self.proxies)
        else:
            os.utime(self.heartbeat)

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            try:
                self._beat()
                self.renewals += 1
            except (ToxiproxyError, OSError) as err:
                self.renew_errors += 1
                log.warning("fault lease %s not renewed: %s", self.lease_id, err)

    def _start_watchdog(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="mesh-fault-lease-"))
        self.heartbeat.write_text("alive\n")
        argv = [sys.executable, "-m", "grpc_resilience_mesh.chaos.topology.watchdog"]
        argv += ["--toxiproxy", self.url, "--heartbeat", str(self.heartbeat)]
        argv += ["--pid", str(os.getpid()), "--ttl-s", str(self.ttl_s)]
        for name in self.proxies:
            argv += ["--proxy", name]
        env = dict(os.environ)
        if self._token:
            env[TOKEN_ENV] = self._token  # never on the command line, where anyone can read it
        with (self._dir / "watchdog.log").open("wb") as logfile:
            self._watchdog = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logfile,
                stderr=logfile,
                env=env,
                start_new_session=True,
            )
        self._wait_armed()

    def _wait_armed(self) -> None:
        assert self._watchdog is not None
        until = time.monotonic() + ARM_TIMEOUT_S
        while not armed_path(self.heartbeat).exists():
            if self._watchdog.poll() is not None or time.monotonic() > until:
                log_text = (self.heartbeat.parent / "watchdog.log").read_text(errors="replace")
                self._kill_watchdog()
                shutil.rmtree(self.heartbeat.parent, ignore_errors=True)
                self._dir = None
                raise LeaseError(f"the fault watchdog did not start: {log_text.strip()[-300:]}")
            time.sleep(0.02)

    def release(self) -> None:
        """Stops the heartbeat and drops the lease (the watchdog exits): idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ttl_s)
            self._thread = None
        if self.embedded:
            with contextlib.suppress(ToxiproxyError):
                self._client.delete_lease(self.lease_id)
            return
        if self._dir is None:
            return
        with contextlib.suppress(OSError):
            self.heartbeat.write_text(RELEASED + "\n")
        if self._watchdog is not None:
            try:
                self._watchdog.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self._kill_watchdog()
            self._watchdog = None
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def _kill_watchdog(self) -> None:
        if self._watchdog is not None and self._watchdog.poll() is None:
            self._watchdog.kill()
            self._watchdog.wait()
