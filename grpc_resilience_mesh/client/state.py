"""The state file a running mesh writes (mesh.json): its address book, what a client of the
running mesh (`mesh call`, the console, the chaos runner) reads to reach it. The launcher writes
it; it lives with the client, below the launcher, so that reading it loads no launcher."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from grpc_resilience_mesh.services import settings

STATE_FILE = "mesh.json"
STATE_DIR = settings.Var(
    "MESH_STATE_DIR", settings.text, "var", "where `mesh up` records the running mesh (mesh.json)"
)
STATE_PATH = settings.Var(
    "MESH_STATE_FILE",
    settings.text,
    "",
    "the mesh.json a Chaos Toolkit run acts on (chaosgrpcmesh), not $MESH_STATE_DIR/mesh.json",
)


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
    owner_pid: int | None = None
    """The process that started the mesh and will stop it (`mesh up`, the runner)."""
    control: str | None = None
    """`mesh up`'s control socket (how `mesh restart` reaches it); None: nothing supervises."""
    admin_token: str | None = None
    """The bearer token the admin ports and the embedded Toxiproxy's API require (None: open)."""
    internal_token: str | None = None
    """The bearer token the services behind the gateway require
    (grpc_resilience_mesh.services.runtime.internal_auth; None: they answer anyone)."""

    def save(self, state_dir: Path) -> Path:
        """Replace mesh.json atomically with a file born 0600 (it holds the API key, the admin
        token and the internal token)."""
        path = state_dir / STATE_FILE
        fd, tmp = tempfile.mkstemp(dir=state_dir, prefix=f".{STATE_FILE}.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                out.write(json.dumps(asdict(self), indent=2))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, state_dir: Path) -> MeshState | None:
        path = state_dir / STATE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
