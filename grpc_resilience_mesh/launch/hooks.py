"""What a supervisor (grpc_resilience_mesh.launch.supervisor) and a test ask of a running mesh:
which processes are the mesh's own, which are watched, and stopping one on purpose."""

from __future__ import annotations

import signal

from grpc_resilience_mesh.launch.lifecycle import MeshProcesses
from grpc_resilience_mesh.launch.processes import ProcessStatus


class MeshHooks(MeshProcesses):
    """The supervisor's view; restarting is grpc_resilience_mesh.launch.restarts'."""

    def interrupt(self) -> None:
        """Make a wait for a process to become ready (a restart in progress) give up now:
        the mesh is about to stop. stop() does this too; start() undoes it."""
        self._stopping.set()

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

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> int:
        """Signal one process by name (kill -9 by default) and wait for it; its exit code.
        It stays listed, so restart_service() can bring a mesh service back, and it is
        marked stopped on purpose, so a supervisor does not."""
        with self._lock:
            # The newest of that name: an experiment repeated on one mesh starts its workers
            # again under the same names, and the dead ones of the run before stay listed.
            proc = next(p for p in reversed(self.procs) if p.name == name)
            proc.stopped = True
            if proc.popen.poll() is None:
                proc.popen.send_signal(sig)
        return proc.popen.wait(15)  # outside the lock: kills side by side wait together

    def alive(self) -> list[str]:
        return [p.name for p in self.procs if p.popen.poll() is None]
