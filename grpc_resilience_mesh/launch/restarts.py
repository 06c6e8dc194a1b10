"""Replacing the mesh's processes while it runs: one process (a crash, `mesh restart`, a
supervisor), or every service under another policy (how the runner switches variants)."""

from __future__ import annotations

import signal
import subprocess

from grpc_resilience_mesh.launch.lifecycle import MeshProcesses
from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.launch.processes import GRACE_S, LaunchError, describe_exit, terminate
from grpc_resilience_mesh.launch.xds_plane import XdsPlane
from grpc_resilience_mesh.services.topology import INSTANCES


class MeshRestarts(MeshProcesses):
    """A restarted process keeps its ports and the current policy; its log is appended to."""

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
                known = ", ".join(p.name for p in self.procs if p.supervised)
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

    def _switch_xds(self, on: bool) -> None:
        """The control plane up (a new one on free ports) or down; the callers follow it at
        their next start."""
        running = next((p for p in self.procs if p.name == "xds"), None)
        if on and running is None:
            ads_port, admin_port = free_ports(2)
            self.xds = XdsPlane(self.state_dir, ads_port, admin_port)
            self.write_xds()
            self._add("xds")
        elif not on:
            if running is not None:
                terminate(running.popen, signal.SIGTERM, GRACE_S)
                self.procs.remove(running)
            self.xds = None

    def record_policy(self, policy: str) -> None:
        """Note a policy the services took on in place (PolicyAdmin), so a later
        restart_service() starts them under it, not under the one the mesh started with."""
        with self._lock:
            self.policy = policy
            self.write_xds()
            if self.state is not None:
                self.state.policy = policy
                self.state.save(self.state_dir)

    def restart_services(self, policy: str, xds: bool | None = None) -> None:
        """Stop every service, then start them again under `policy` (Toxiproxy keeps running);
        with `xds`, into (True) or out of (False) `mesh up --xds`'s wiring, the control plane
        started or stopped with it.

        How an experiment switches between its variants: each variant starts from fresh
        breakers, budgets and caches, as after a deploy.
        """
        names = {s.name for s in INSTANCES}
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
                if xds is not None:
                    self._switch_xds(xds)
                self.write_xds()
                self._start_services()
            except BaseException:
                self.stop()
                raise
            self._save_state()
