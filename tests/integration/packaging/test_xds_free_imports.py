"""No module of the package but the two that serve and read CSDS imports grpcio-csds (or
xds-protos's packages) when loaded: the base install leaves them out (the `[xds]` extra's), and
`mesh up`, `mesh call` and `mesh chaos run` without --xds, and the services, load without them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
XDS_ONLY = {
    "grpc_resilience_mesh.services.runtime.csds",  # imported by a service dialling xds:/// only
    "grpc_resilience_mesh.console.csds",  # imported by the console and `mesh status` under --xds
}

# Every module of the package imported with grpcio-csds and xds-protos's packages unimportable,
# as in the base install: those that then fail on one of them, as JSON.
PROBE = """
import importlib, json, pkgutil, sys
BLOCKED = {"grpc_csds", "envoy", "xds", "udpa", "validate"}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
import grpc_resilience_mesh
needing = []
for info in pkgutil.walk_packages(grpc_resilience_mesh.__path__, "grpc_resilience_mesh."):
    if info.name.rsplit(".", 1)[-1] == "__main__":
        continue
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] in BLOCKED:
            needing.append(info.name)
    except Exception:
        pass  # another module's own trouble: the other tests' business
print(json.dumps(sorted(needing)))
"""


def test_only_the_csds_modules_need_grpcio_csds_to_import() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    needing = set(json.loads(done.stdout))
    assert needing == XDS_ONLY, sorted(needing ^ XDS_ONLY)
