"""The xDS control plane as one of the mesh's processes (`mesh up --xds`): where its binary
is, its ports, its files under the state dir, and each caller's environment under it.

mesh-xds (tools/xds-control, built by `make peers`) reads xds/xds.json and pushes every change
of it to the clients within its 100 ms poll; the launcher rewrites the file whenever the mesh
takes on another policy (grpc_resilience_mesh.launch.restarts).
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.xds_config import (
    XDS_CALLERS,
    bootstrap,
    plane_config,
    write_json,
    xds_target,
)
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.settings import XDS_EXTRA
from grpc_resilience_mesh.services.topology import Edge


def _xds_binary() -> Path:
    """.peers/bin/mesh-xds of this checkout when built, else a mesh-xds on PATH (an installed
    package has no .peers beside it), else the former (for the message naming `make peers`)."""
    built = Path(__file__).resolve().parents[2] / ".peers" / "bin" / "mesh-xds"
    on_path = None if built.is_file() else shutil.which("mesh-xds")
    return built if on_path is None else Path(on_path)


XDS_BINARY = _xds_binary()
"""Built by `make peers` (tools/peers.py) from tools/xds-control."""


def missing_extra() -> str | None:
    """Why this install cannot start services under xDS, or None: "needs grpcio-csds ...",
    for the caller to put what was asked before it."""
    if importlib.util.find_spec("grpc_csds") is not None:
        return None
    return (
        "needs grpcio-csds (the services serve CSDS under xDS), which the base install leaves "
        f"out: {XDS_EXTRA}"
    )


XDS_TOKEN_ENV = "MESH_XDS_TOKEN"
"""The token mesh-xds's admin requires (all but GET /healthz), from the environment only: its
command line is readable by every user of the host. `mesh up` gives it the run's admin token."""

BOOTSTRAP_ENV = "GRPC_XDS_BOOTSTRAP"
"""gRPC's own variable: the path of the bootstrap file its xDS client reads."""

A50_TRACE_ENV = {"GRPC_TRACE": "outlier_detection_lb", "GRPC_VERBOSITY": "INFO"}
"""gRPC core's outlier_detection_lb trace into a caller's log: A50's ejections are reported
nowhere else in grpcio 1.85 (no event, no metric: A91's are not implemented), and the
experiments' `replicas` check reads them there (grpc_resilience_mesh/chaos/scenarios/a50_log.py)."""


@dataclass(frozen=True)
class XdsPlane:
    """One mesh's control plane: ADS and admin HTTP on loopback, files in `state_dir`/xds."""

    state_dir: Path
    ads_port: int
    admin_port: int
    binary: Path = XDS_BINARY

    @property
    def directory(self) -> Path:
        return self.state_dir / "xds"

    @property
    def config_path(self) -> Path:
        return self.directory / "xds.json"

    @property
    def ads(self) -> str:
        return f"127.0.0.1:{self.ads_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    def bootstrap_path(self, caller: str) -> Path:
        return self.directory / f"bootstrap-{caller}.json"

    def args(self) -> list[str]:
        """mesh-xds's command line; LaunchError naming `make peers` when it is not built."""
        if not self.binary.is_file():
            raise LaunchError(
                f"--xds needs the control plane {self.binary}: run `make peers` (needs go), "
                "or put a mesh-xds on PATH"
            )
        return [
            str(self.binary),
            *("-config", str(self.config_path)),
            *("-ads", self.ads, "-admin", f"127.0.0.1:{self.admin_port}"),
        ]

    def write(self, policy: MeshPolicy, addresses: dict[str, str]) -> None:
        """The plane's file for `policy` (the edges' replicas in `addresses`, by edge name)
        and every caller's bootstrap; the running plane pushes the change."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for caller in XDS_CALLERS:
            write_json(self.bootstrap_path(caller), bootstrap(self.ads, caller))
        write_json(self.config_path, plane_config(policy, lambda e: addresses[e.name]))

    def caller_env(self, caller: str, edges: list[Edge]) -> dict[str, str]:
        """What a caller's process is started with: xds:/// targets, its bootstrap, and the
        trace that logs A50's ejections."""
        if caller not in XDS_CALLERS:
            return {}
        env = {e.addr_env: xds_target(e) for e in edges}
        env[BOOTSTRAP_ENV] = str(self.bootstrap_path(caller))
        env.update(A50_TRACE_ENV)
        return env
