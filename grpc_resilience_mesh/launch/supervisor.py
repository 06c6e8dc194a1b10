"""`mesh up`'s supervision: a process of the mesh that dies is started again, with backoff.

Like Compose's `restart: unless-stopped`: whatever its exit code, a process nobody stopped on
purpose (Mesh.kill, Mesh.stop) comes back on the same ports under the same policy
(Mesh.restart_service). Between quick failures the delay doubles, 0.5 s to 10 s; a process
that stayed up 10 s starts over at 0.5 s (Docker and systemd's restart backoff work alike).

Only `mesh up` supervises. The experiment runner does not, so the processes its experiments
kill on purpose stay down until the experiment brings them back.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from grpc_resilience_mesh.launch.control import ControlServer
from grpc_resilience_mesh.launch.processes import LaunchError, ProcessStatus, describe_exit


@dataclass(frozen=True)
class Backoff:
    """Restart delays: `initial_s`, times `factor` per quick failure, at most `cap_s`."""

    initial_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 10.0
    reset_after_s: float = 10.0
    """A process that ran this long before it died counts as healthy: the delay starts over."""

    def delay_s(self, failures: int) -> float:
        """The wait before the restart that follows `failures` quick failures in a row (>= 1)."""
        return float(min(self.cap_s, self.initial_s * self.factor ** max(failures - 1, 0)))


@dataclass(frozen=True)
class SupervisorEvent:
    """Something the supervisor saw or did, for the console and the log."""

    kind: str
    """exited, restarted, failed, requested or error."""
    name: str
    message: str
    pid: int | None = None


class SupervisedMesh(Protocol):
    """What the supervisor needs of grpc_resilience_mesh.launch.mesh.Mesh."""

    @property
    def stopping(self) -> bool: ...

    def supervised(self) -> list[ProcessStatus]: ...

    def components(self) -> list[str]: ...

    def restart_service(self, name: str) -> int: ...

    def record_policy(self, policy: str) -> None: ...


@dataclass
class _Track:
    failures: int = 0
    """Quick failures in a row (exits within reset_after_s of a start, failed starts)."""
    due_s: float | None = None
    """When the next restart is due; None while the process is up."""
    restarts: int = 0
    error: str = ""
    """Why the last restart failed."""


class Supervisor:
    """Watches the mesh's processes and restarts the dead; answers control requests.

    One thread runs it (run()), so a crash restart and a `mesh restart` never overlap.
    """

    def __init__(
        self,
        mesh: SupervisedMesh,
        listener: Callable[[SupervisorEvent], None],
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mesh = mesh
        self.listener = listener
        self.backoff = backoff or Backoff()
        self.clock = clock
        self._tracks: dict[str, _Track] = {}

    def run(
        self, stop: threading.Event, control: ControlServer | None, tick_s: float = 0.2
    ) -> None:
        """Check the processes and serve control requests every `tick_s` until `stop`."""
        while not stop.is_set():
            try:
                self.poll()
                if control is not None:
                    control.serve(self.handle, timeout_s=tick_s)
                else:
                    stop.wait(tick_s)
            except Exception as err:  # a supervisor that dies of its own bug supervises nothing
                with contextlib.suppress(Exception):
                    self._emit("error", "supervisor", f"supervisor error: {err!r}")
                stop.wait(tick_s)

    def poll(self) -> None:
        """Notice processes that died (scheduling their restart) and restart those due."""
        if self.mesh.stopping:
            return
        for proc in self.mesh.supervised():
            track = self._tracks.setdefault(proc.name, _Track())
            now = self.clock()
            if track.due_s is None:
                if proc.exit_code is None:
                    continue
                up_s = now - proc.started_at
                quick = up_s < self.backoff.reset_after_s
                track.failures = track.failures + 1 if quick else 1
                delay = self._schedule(track, now)
                self._emit(
                    "exited",
                    proc.name,
                    f"{proc.name} (pid {proc.pid}) {describe_exit(proc.exit_code)} after "
                    f"{up_s:.1f} s; restarting it in {delay:.1f} s",
                    proc.pid,
                )
            if track.due_s is not None and now >= track.due_s:
                self._restart(proc.name, track)

    def _schedule(self, track: _Track, now: float) -> float:
        delay = self.backoff.delay_s(track.failures)
        track.due_s = now + delay
        return delay

    def _restart(self, name: str, track: _Track) -> int | None:
        try:
            pid = self.mesh.restart_service(name)
        except (LaunchError, OSError) as err:  # OSError: it could not even be spawned
            if self.mesh.stopping:
                return None
            track.failures += 1
            track.error = str(err)
            delay = self._schedule(track, self.clock())
            reason = track.error.splitlines()[0]
            self._emit(
                "failed", name, f"{name} did not come back ({reason}); next try in {delay:.1f} s"
            )
            return None
        track.due_s = None
        track.restarts += 1
        self._emit(
            "restarted",
            name,
            f"{name} restarted: pid {pid}, serving again (restart {track.restarts})",
            pid,
        )
        return pid

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one control request (grpc_resilience_mesh.launch.control)."""
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op == "policy" and isinstance(request.get("policy"), str):
            self.mesh.record_policy(request["policy"])
            return {"ok": True}
        if op != "restart":
            return {"ok": False, "error": f"unknown request {op!r}"}
        name = request.get("service")
        known = self.mesh.components()
        if not isinstance(name, str) or name not in known:
            error = f"unknown service {name!r}; this mesh runs: {', '.join(known)}"
            return {"ok": False, "error": error, "unknown": True}
        old = next((p.pid for p in self.mesh.supervised() if p.name == name), None)
        self._emit("requested", name, f"restarting {name} on request (mesh restart)", old)
        track = self._tracks.setdefault(name, _Track())
        track.failures = 0
        started = self.clock()
        pid = self._restart(name, track)
        if pid is None:
            return {"ok": False, "error": f"{track.error}\n(mesh up keeps trying, with backoff)"}
        return {"ok": True, "pid": pid, "old_pid": old, "seconds": self.clock() - started}

    def _emit(self, kind: str, name: str, message: str, pid: int | None = None) -> None:
        self.listener(SupervisorEvent(kind, name, message, pid))
