"""tests/k8s_node run only inside `make k8s-real-node`, against the one real node it started
(the kubelet, containerd and runc, kube-proxy and CoreDNS, in namespaces of its own). The
`chaos` overlay is applied once into a namespace that enforces Pod Security `restricted`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s.cluster import NAMESPACE, Kubectl, wait_until
from tests.support.rehearsal_gate import skip_outside
from tests.unit.deploy.deploy_sources import OVERLAYS, ROOT

LEDGER_VOLUME = ROOT / "deploy" / "k8s-rehearsal" / "payment-ledger-pv.yaml"
POD_SECURITY = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")
}
MESH_UID = 10001  # deploy/Dockerfile's user: payment writes its ledger as it


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_outside(
        items,
        Path(__file__).parent,
        "MESH_K8S_REAL_NODE",
        "deploy/k8s on a real node: run by `make k8s-real-node` (it builds the control "
        "plane, the kubelet, kube-proxy, CoreDNS and the images, starts them in namespaces of "
        "its own, then runs these)",
    )


@pytest.fixture(scope="session")
def kubectl() -> Kubectl:
    return Kubectl(os.environ["REHEARSAL_KUBECTL"])


def ledger_volume(work: Path) -> str:
    """payment-ledger-pv.yaml with its hostPath in the rehearsal's folder, owned by the mesh's
    user (a hostPath volume ignores fsGroup; a real cluster's provisioner does this part)."""
    path = work / "payment-ledger"
    path.mkdir(exist_ok=True)
    shutil.chown(path, MESH_UID, MESH_UID)
    text = LEDGER_VOLUME.read_text()
    assert "path: /var/lib/mesh-rehearsal/payment-ledger" in text
    return text.replace("path: /var/lib/mesh-rehearsal/payment-ledger", f"path: {path}")


@pytest.fixture(scope="session")
def chaos(kubectl: Kubectl) -> Iterator[str]:
    """The `chaos` overlay applied and every Deployment rolled out: its rollout output."""
    kubectl.run("create", "namespace", NAMESPACE)
    kubectl.run("label", "namespace", NAMESPACE, *(f"{k}={v}" for k, v in POD_SECURITY.items()))
    kubectl.run("apply", "--filename", "-", stdin=ledger_volume(Path(os.environ["REHEARSAL_WORK"])))
    applied = kubectl.run(
        "apply", "--server-side", "--validate=strict", "--kustomize", str(OVERLAYS["chaos"])
    )
    assert not applied.stderr, applied.stderr
    try:
        out = []
        for d in kubectl.items("deployments"):
            name = d["metadata"]["name"]
            done = kubectl.run(
                "rollout",
                "status",
                f"deployment/{name}",
                "--timeout",
                "420s",
                check=False,
                timeout=440,
            )
            assert done.returncode == 0, f"{name}: {done.stderr}\n{describe(kubectl)}"
            out.append(done.stdout.strip())
        yield "\n".join(out)
    finally:
        kubectl.run("delete", "namespace", NAMESPACE, "--timeout", "180s", check=False, timeout=200)
        wait_until(
            "the namespace gone",
            lambda: kubectl.run("get", "namespace", NAMESPACE, check=False).returncode != 0,
            180,
        )


def describe(kubectl: Kubectl) -> str:
    """The pods' states and the namespace's last events: why a rollout did not finish."""
    pods = kubectl.run("get", "pods", "--output", "wide", check=False).stdout
    events = kubectl.run("get", "events", "--sort-by", ".lastTimestamp", check=False).stdout
    return pods + "\n" + "\n".join(events.splitlines()[-25:])
