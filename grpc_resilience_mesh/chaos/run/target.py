"""The mesh an experiment runs against: addresses of its gateway, Toxiproxy, admin and metrics.

A target is a mesh this process started, the mesh a running `mesh up` describes in its state
file, or addresses given on the command line (`--target`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.client.counters import scrape
from grpc_resilience_mesh.client.state import STATE_DIR, STATE_FILE
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.topology import INSTANCES

STATE_FILE_MAX_BYTES = 1 << 20


@dataclass
class Target:
    """A running mesh: addresses of its gateway, Toxiproxy API, admin and metrics endpoints."""

    gateway: str
    toxiproxy: str | None
    admin: dict[str, str]
    metrics: dict[str, str]
    api_key: str | None = None
    mesh: Mesh | None = None
    state_dir: Path = Path("var")
    policy: str | None = None
    """The policy a mesh we did not start runs under: put back after the variants."""
    admin_token: str | None = None
    """What its admin ports and Toxiproxy's API require (`admin_token=` or mesh.json)."""
    xds_admin: str | None = None
    """A mesh we did not start, run by `mesh up --xds`: its control plane's admin URL."""

    def plane_admin(self) -> str | None:
        """The xDS control plane's admin URL now (a mesh we started may have switched into or
        out of xDS for a variant), or None when the mesh is not under xDS."""
        if self.mesh is not None:
            return None if self.mesh.xds is None else self.mesh.xds.admin_url
        return self.xds_admin

    def mesh_pids(self) -> dict[str, int] | None:
        """The PIDs whose CPU is the mesh's (the services and Toxiproxy, by name) when this
        process launched them; None for a mesh we did not start (its CPU is not ours to
        read). A name started again (a restarted worker) maps to its newest process."""
        if self.mesh is None:
            return None
        names = {s.name for s in INSTANCES} | {"toxiproxy"}
        return {
            p.name: p.popen.pid
            for p in self.mesh.procs
            if p.name in names and p.popen.poll() is None
        }

    async def settle(self, limit_s: float = 15.0) -> float:
        """Wait until no service has a call in flight (the backlog of an overload drained)."""
        started = time.monotonic()
        while self.metrics and time.monotonic() - started < limit_s:
            snap = await scrape(self.metrics)
            if snap.total("mesh_server_in_flight") <= 0:
                break
            await asyncio.sleep(0.1)
        return time.monotonic() - started

    @classmethod
    def from_mesh(cls, mesh: Mesh) -> Target:
        state = mesh.state
        assert state is not None, "start the mesh first"
        return cls(
            gateway=state.gateway,
            toxiproxy=state.toxiproxy,
            admin={k: v["admin"] for k, v in state.services.items()},
            metrics={k: v["metrics"] for k, v in state.services.items()},
            api_key=state.api_key,
            admin_token=state.admin_token,
            mesh=mesh,
            state_dir=mesh.state_dir,
        )

    @classmethod
    def parse(cls, spec: str, environ: Mapping[str, str] | None = None) -> Target:
        """`running` (the mesh `mesh up` describes in $MESH_STATE_DIR or var/), a mesh.json
        or the folder holding one, or
        `toxiproxy=URL,gateway=HOST:PORT[,admin.SERVICE=HOST:PORT][,metrics.SERVICE=URL]`
        (also `api_key=` and `admin_token=`)."""
        if spec == "running":
            return cls.from_state_file(Path(STATE_DIR.read(environ)) / STATE_FILE)
        if "=" not in spec:
            path = Path(spec)
            return cls.from_state_file(path / STATE_FILE if path.is_dir() else path)
        fields: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not value:
                raise ValueError(f"--target: {part!r} is not KEY=VALUE")
            fields[key] = value
        if "gateway" not in fields:
            raise ValueError("--target needs gateway=HOST:PORT")
        known = {"gateway", "toxiproxy", "api_key", "admin_token"}
        for key in fields:
            if key not in known and not key.startswith(("admin.", "metrics.")):
                raise ValueError(f"--target: unknown key {key!r}")
        return cls(
            gateway=fields["gateway"],
            toxiproxy=fields.get("toxiproxy"),
            admin={k[6:]: v for k, v in fields.items() if k.startswith("admin.")},
            metrics={k[8:]: v for k, v in fields.items() if k.startswith("metrics.")},
            api_key=fields.get("api_key"),
            admin_token=fields.get("admin_token"),
        )

    @classmethod
    def from_state_file(cls, path: Path) -> Target:
        """The mesh a running `mesh up` describes in its mesh.json: every address and its key."""
        try:
            with path.open("rb") as fh:
                state = json.loads(fh.read(STATE_FILE_MAX_BYTES))
        except FileNotFoundError:
            raise ValueError(f"--target {path}: no such file; is `mesh up` running?") from None
        except OSError as err:
            raise ValueError(f"--target {path}: cannot read: {err.strerror or err}") from None
        except (ValueError, RecursionError):
            raise ValueError(f"--target {path}: not a mesh state file (not JSON)") from None
        services = state.get("services") if isinstance(state, dict) else None
        if not isinstance(services, dict) or not isinstance(state.get("gateway"), str):
            raise ValueError(f"--target {path}: not a mesh state file (no gateway, no services)")
        pids = state.get("pids")
        gateway_pid = pids.get("gateway") if isinstance(pids, dict) else None
        if isinstance(gateway_pid, int) and not _alive(gateway_pid):
            raise ValueError(f"--target {path}: that mesh is not running (gateway pid exited)")

        def addresses(kind: str) -> dict[str, str]:
            return {
                name: entry[kind]
                for name, entry in services.items()
                if isinstance(entry, dict) and isinstance(entry.get(kind), str)
            }

        def text(key: str) -> str | None:
            value = state.get(key)
            return value if isinstance(value, str) and value else None

        return cls(
            gateway=state["gateway"],
            toxiproxy=text("toxiproxy"),
            admin=addresses("admin"),
            metrics=addresses("metrics"),
            api_key=text("api_key"),
            admin_token=text("admin_token"),
            state_dir=Path(text("state_dir") or path.parent),
            policy=text("policy"),
            xds_admin=_xds_admin(state.get("extra")),
        )


def _xds_admin(extra: object) -> str | None:
    value = extra.get("xds_admin") if isinstance(extra, dict) else None
    return value if isinstance(value, str) and value else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
