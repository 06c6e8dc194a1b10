"""tests/k8s run only inside `make k8s-rehearsal`, against the control plane it started (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, two kwok nodes). Each overlay in turn
is applied into a namespace that enforces Pod Security `restricted`, tested, and deleted."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.k8s.cluster import NAMESPACE, Kubectl, wait_until
from tests.support.rehearsal_gate import skip_outside
from tests.unit.deploy.deploy_sources import OVERLAYS, ROOT
from tests.unit.deploy.kustomize import render

# What the rehearsal provides that a real cluster's storage would: deploy/README.md says so.
LEDGER_VOLUME = ROOT / "deploy" / "k8s-rehearsal" / "payment-ledger-pv.yaml"
POD_SECURITY = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_outside(
        items,
        Path(__file__).parent,
        "MESH_K8S_REHEARSAL",
        "deploy/k8s on a real API server: run by `make k8s-rehearsal` (it builds etcd, "
        "the control plane and kwok once, starts them on loopback, then runs these)",
    )


@dataclass(frozen=True)
class Applied:
    """One overlay as `kubectl apply --server-side --validate=strict -k` left it."""

    name: str
    rendered: list[dict[str, Any]]
    result: subprocess.CompletedProcess[str]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.rendered if o["kind"] == kind]


@pytest.fixture(scope="session")
def kubectl() -> Kubectl:
    return Kubectl(os.environ["REHEARSAL_KUBECTL"])


@pytest.fixture(scope="session")
def nodes(kubectl: Kubectl) -> list[str]:
    names = sorted(n["metadata"]["name"] for n in kubectl.items("nodes"))
    assert len(names) == 2, f"the rehearsal registers two kwok nodes, not {names}"
    return names


@pytest.fixture(scope="session", params=sorted(OVERLAYS))
def overlay(request: pytest.FixtureRequest, kubectl: Kubectl) -> Iterator[Applied]:
    name: str = request.param
    kubectl.run("create", "namespace", NAMESPACE)
    kubectl.run("label", "namespace", NAMESPACE, *(f"{k}={v}" for k, v in POD_SECURITY.items()))
    kubectl.run("apply", "--filename", str(LEDGER_VOLUME))
    result = kubectl.run(
        "apply",
        "--server-side",
        "--validate=strict",
        "--kustomize",
        str(OVERLAYS[name]),
        check=False,
    )
    try:
        yield Applied(name, render(OVERLAYS[name]), result)
    finally:
        kubectl.run("delete", "namespace", NAMESPACE, "--timeout", "180s")
        kubectl.run("delete", "--filename", str(LEDGER_VOLUME), "--timeout", "60s")
        wait_until(
            "the namespace gone",
            lambda: kubectl.run("get", "namespace", NAMESPACE, check=False).returncode != 0,
        )


@pytest.fixture(scope="session")
def rolled_out(overlay: Applied, kubectl: Kubectl) -> Applied:
    """The overlay once every Deployment has rolled out (fails the tests that need it if not)."""
    for deployment in overlay.of_kind("Deployment"):
        kubectl.run(
            "rollout",
            "status",
            f"deployment/{deployment['metadata']['name']}",
            "--timeout",
            "180s",
            timeout=200,
        )
    return overlay
