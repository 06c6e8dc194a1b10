"""deploy/k8s's `chaos` overlay on one real node: containers run from the images imported into
containerd, names resolve through CoreDNS, Services route through kube-proxy, and the chaos
runner through port-forwards counts the calls the embedded mesh counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.k8s.cluster import Kubectl, ready
from tests.k8s_node.node import chaos_target, mesh_pods
from tests.support.chaos_calls import MESH, ROOT, against_embedded, outputs

NODE = "real-node-1"


def in_pod(kubectl: Kubectl, pod: str, code: str) -> subprocess.CompletedProcess[str]:
    """python -c CODE in the pod's container (kubectl exec: the API server, the kubelet, CRI)."""
    return kubectl.run("exec", pod, "--", "python", "-c", code, check=False, timeout=60)


def test_every_pod_runs_its_containers_from_the_imported_images(
    chaos: str, kubectl: Kubectl
) -> None:
    pods = kubectl.items("pods")
    assert pods
    for pod in pods:
        name = pod["metadata"]["name"]
        assert pod["spec"]["nodeName"] == NODE, name
        assert ready(pod), name
        for status in pod["status"]["containerStatuses"]:
            assert status["containerID"].startswith("containerd://"), name
            assert status["state"].get("running"), (name, status["state"])
    # No registry is reachable: every image was there, none pulled.
    events = kubectl.items("events")
    pulled = [e["message"] for e in events if e["reason"] in ("Pulling", "Pulled")]
    assert pulled and all("already present on machine" in m for m in pulled), pulled


def test_containers_run_as_the_mesh_user_on_a_read_only_root(chaos: str, kubectl: Kubectl) -> None:
    pod = mesh_pods(kubectl)["gateway"]["metadata"]["name"]
    code = (
        "import os\n"
        "try:\n    open('/probe', 'w')\n"
        "except OSError as e:\n    print(os.getuid(), e.strerror)"
    )
    done = in_pod(kubectl, pod, code)
    assert done.stdout.strip() == "10001 Read-only file system", done.stdout + done.stderr


def test_names_resolve_through_coredns_and_services_route_through_kube_proxy(
    chaos: str, kubectl: Kubectl
) -> None:
    services = {s["metadata"]["name"]: s["spec"] for s in kubectl.items("services")}
    pods = kubectl.items("pods")
    profile_ips = sorted(
        p["status"]["podIP"]
        for p in pods
        if p["metadata"]["labels"].get("app.kubernetes.io/name") == "profile"
    )
    gateway = mesh_pods(kubectl)["gateway"]["metadata"]["name"]
    code = (
        "import json, socket, urllib.request\n"
        "names = {n: sorted({a[4][0] for a in socket.getaddrinfo(n, 80, socket.AF_INET)})"
        " for n in ('payment', 'toxiproxy', 'profile')}\n"
        "version = urllib.request.urlopen('http://toxiproxy:8474/version', timeout=10).read()\n"
        "print(json.dumps({'names': names, 'version': version.decode()}))"
    )
    done = in_pod(kubectl, gateway, code)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # A ClusterIP Service resolves to its virtual address (only kube-proxy's rules make that
    # reachable); the headless profile to its pods' addresses.
    assert seen["names"]["payment"] == [services["payment"]["clusterIP"]]
    assert seen["names"]["toxiproxy"] == [services["toxiproxy"]["clusterIP"]]
    assert seen["names"]["profile"] == profile_ips
    assert seen["version"].strip(), seen


@pytest.mark.timeout(1500)
def test_provider_outage_through_port_forwards_counts_the_calls_the_embedded_run_counts(
    chaos: str, kubectl: Kubectl, tmp_path: Path
) -> None:
    with chaos_target(kubectl) as target:
        run = [*MESH, "chaos", "run", "provider-outage", "--target", target]
        on_node = subprocess.run(
            [*run, *outputs(tmp_path, "k8s")],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
        )
    in_cluster = tmp_path / "k8s.json"
    # As in the compose rehearsal: what is compared is what the runner measured, in its JSON.
    assert in_cluster.exists(), on_node.stdout[-3000:] + on_node.stderr[-3000:]
    k8s_calls, embedded_calls, differ = against_embedded(in_cluster, tmp_path)
    print(f"calls to provider: k8s {k8s_calls}, embedded {embedded_calls}")
    assert not differ, f"{differ}; k8s {k8s_calls}, embedded {embedded_calls}"
