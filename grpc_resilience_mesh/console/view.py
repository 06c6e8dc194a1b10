"""One picture of a running mesh, as JSON: nodes, edges with their figures, breakers,
bulkheads, budgets and faults, and the experiment running on it (if any)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.faults import AppFault, FaultControl, FaultError
from grpc_resilience_mesh.console.job_edges import JOB_EDGES, job_edge_stats
from grpc_resilience_mesh.console.metrics_view import EdgeStats, MetricsWindow
from grpc_resilience_mesh.console.policy_view import policies_in_force, policy_label
from grpc_resilience_mesh.console.replica_view import replica_views
from grpc_resilience_mesh.launch.xds_config import XDS_CALLERS
from grpc_resilience_mesh.launch.xds_faults import PlaneAdmin, XdsFault, XdsFaultError
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import EDGES, SERVICES, replica_of

GRPC_SERVERS = frozenset(s.name for s in SERVICES)
"""The gRPC services: their metrics describe their edges (as callers) and their admission (in
flight against the concurrency limit, refusals), so these are scraped."""

APP_FAULTS_EVERY_S = 2.0
"""App faults are listed over gRPC from every service: at most this often (or after a change
made here), which is most of what an open console costs the mesh."""
PROGRESS_FILE = "experiment.json"
"""Written by the experiment runner while it runs (grpc_resilience_mesh.chaos.run.progress_file)."""
PROGRESS_FRESH_S = 10.0


def read_progress(state_dir: Path, now_s: float | None = None) -> dict[str, Any] | None:
    """The running experiment's progress, or None when none has written it lately."""
    path = state_dir / PROGRESS_FILE
    try:
        data = json.loads(path.read_text())
        written = path.stat().st_mtime
    except (OSError, ValueError):
        return None
    now_s = time.time() if now_s is None else now_s
    if not isinstance(data, dict) or data.get("finished") or now_s - written > PROGRESS_FRESH_S:
        return None
    return data


CONSOLE_WINDOW_S = 5.0
"""The console's rates are over the last this many seconds (`mesh status` says so beside its
own --window, which is shorter by default: the two differ while a fault comes or goes)."""


class MeshView:
    """Reads the mesh `state` describes: its metrics (a short window), faults and progress."""

    def __init__(
        self, state: MeshState, window_s: float = CONSOLE_WINDOW_S, fresh_s: float = 0.0
    ) -> None:
        """`fresh_s`: a snapshot scrapes again only when the latest scrape is older (a sampler
        that scrapes in the background keeps it younger; 0: always scrape)."""
        self.state = state
        self._fresh_s = fresh_s
        self.state_dir = Path(state.state_dir)
        self.metrics = MetricsWindow(
            {
                name: addrs["metrics"]
                for name, addrs in state.services.items()
                if replica_of(name) in GRPC_SERVERS and "metrics" in addrs
            },
            window_s,
        )
        self.faults = FaultControl(
            state.toxiproxy,
            {name: addrs["admin"] for name, addrs in state.services.items()},
            self.state_dir,
            experiment_running=lambda: read_progress(self.state_dir) is not None,
            admin_token=state.admin_token,
        )
        self._app_faults: list[AppFault] = []
        self._policies: dict[str, str] = {}
        self._app_faults_at: float | None = None

    def faults_changed(self) -> None:
        """A fault was set or cleared here: list the app faults afresh next time."""
        self._app_faults_at = None

    def _current_app_faults(self) -> list[AppFault]:
        """App faults and each service's policy in force, read afresh at most this often."""
        now = time.monotonic()
        if self._app_faults_at is None or now - self._app_faults_at >= APP_FAULTS_EVERY_S:
            self._app_faults = self.faults.app_faults()
            self._policies = policies_in_force(self.faults, admin_metadata(self.state.admin_token))
            self._app_faults_at = now
        return self._app_faults

    def close(self) -> None:
        self.faults.close()

    def _edge_stats(self, caller: str, dependency: str) -> EdgeStats:
        if f"{caller}_to_{dependency}" in JOB_EDGES:
            growth, seconds = self.metrics.growth()
            return job_edge_stats(growth, seconds, caller, dependency)
        return self.metrics.edge(caller, dependency)

    def _replicas(self, proxies: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        growth, seconds = self.metrics.growth()
        dialled = {name: p["listen"] for name, p in self.state.proxies.items() if "listen" in p}
        views = replica_views(self.metrics.latest(), growth, seconds, proxies, dialled)
        return [asdict(v) for v in views]

    def snapshot(self) -> dict[str, Any]:
        """Scrape now and describe everything; a part that cannot be read says so in `errors`."""
        self.metrics.refresh_if_older(self._fresh_s)
        errors: list[str] = []
        proxies: dict[str, dict[str, Any]] = {}
        if self.faults.client is not None:
            try:
                proxies = self.faults.proxies()
            except FaultError as err:
                errors.append(str(err))
        toxics = self.faults.toxics(proxies) if proxies else []
        app_faults = self._current_app_faults()
        xds_faults = self._xds_faults(errors)
        unreachable = self.metrics.latest().unreachable
        if unreachable:
            errors.append("metrics unreachable: " + ", ".join(sorted(unreachable)))
        edges = []
        for e in EDGES:
            proxy = proxies.get(e.name)
            edges.append(
                {
                    "name": e.name,
                    "caller": e.caller,
                    "dependency": e.dependency,
                    "proxy": None
                    if proxy is None
                    else {"listen": proxy.get("listen"), "enabled": bool(proxy.get("enabled"))},
                    "stats": asdict(self._edge_stats(e.caller, e.dependency)),
                    "toxics": [asdict(t) for t in toxics if t.edge == e.name],
                    "app_faults": [asdict(f) for f in app_faults if f.service == e.dependency],
                    "xds_faults": [asdict(f) for f in xds_faults if f.edge == e.name],
                }
            )
        return {
            "at": time.time(),
            "window_s": self.metrics.growth()[1],
            "policy": policy_label(self._policies, self.state.policy),
            "policies": dict(self._policies),
            "gateway": self.state.gateway,
            "toxiproxy": self.state.toxiproxy,
            "services": sorted(self.state.services),
            "edges": edges,
            "servers": [{"name": s.name, **asdict(self.metrics.server(s.name))} for s in SERVICES],
            "replicas": self._replicas(proxies),
            "app_faults": [asdict(f) for f in app_faults],
            "experiment": read_progress(self.state_dir),
            "csds": self._csds(),
            "errors": errors,
        }

    def _xds_faults(self, errors: list[str]) -> list[XdsFault]:
        """Under `mesh up --xds`: the A33 faults the control plane serves (a failure to read
        them goes into `errors`)."""
        url = self.state.extra.get("xds_admin")
        if not url:
            return []
        try:
            return PlaneAdmin(url, self.state.admin_token).faults()
        except XdsFaultError as err:
            errors.append(str(err))
            return []

    def _csds(self) -> dict[str, dict[str, Any]] | None:
        """Under `mesh up --xds`: each xDS client's short CSDS dump
        (grpc_resilience_mesh.console.csds)."""
        if not self.state.extra.get("xds_admin"):
            return None
        from grpc_resilience_mesh.console.csds import (
            client_dumps,  # the envoy protos: only under --xds
        )

        admin = {name: addrs["admin"] for name, addrs in self.state.services.items()}
        return client_dumps(admin, XDS_CALLERS, self.state.admin_token)
