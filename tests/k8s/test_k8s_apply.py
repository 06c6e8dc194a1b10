"""Each overlay applied server side, strictly validated, under Pod Security `restricted`: every
object stored, nothing refused or warned; then every Deployment rolls out on the kwok nodes and
payment's claim binds to the volume the rehearsal provides."""

from __future__ import annotations

from tests.k8s.cluster import APP, Kubectl, ready
from tests.k8s.conftest import Applied

BARE_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: bare}
spec:
  selector: {matchLabels: {app: bare}}
  template:
    metadata: {labels: {app: bare}}
    spec:
      containers: [{name: bare, image: grpc-resilience-mesh:local}]
"""


def test_the_overlay_is_applied_whole_with_no_refusal_and_no_warning(overlay: Applied) -> None:
    result = overlay.result
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", "kubectl warned or complained"
    lines = result.stdout.splitlines()
    assert all(line.endswith(" serverside-applied") for line in lines), lines
    assert len(lines) == len(overlay.rendered), "one line per object the overlay renders"


def test_every_object_rendered_is_stored(overlay: Applied, kubectl: Kubectl) -> None:
    for obj in overlay.rendered:
        name = obj["metadata"]["name"]
        labels = kubectl.get(obj["kind"], name)["metadata"].get("labels", {})
        assert obj["metadata"].get("labels", {}).items() <= labels.items(), (obj["kind"], name)


def test_pod_security_restricted_is_enforced_in_the_namespace(
    overlay: Applied, kubectl: Kubectl
) -> None:
    """So the warning-free apply above means something: a bare Deployment is warned about and
    a bare Pod refused (server-side dry runs: nothing is stored)."""
    warned = kubectl.run("apply", "--dry-run=server", "--filename", "-", stdin=BARE_DEPLOYMENT)
    assert 'would violate PodSecurity "restricted:latest"' in warned.stderr, warned.stderr
    refused = kubectl.run(
        "run", "bare", "--image", "grpc-resilience-mesh:local", "--dry-run=server", check=False
    )
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr


def test_every_deployment_rolls_out_on_the_kwok_nodes(
    rolled_out: Applied, kubectl: Kubectl, nodes: list[str]
) -> None:
    deployments = {d["metadata"]["name"]: d for d in kubectl.items("deployments")}
    assert set(deployments) == {d["metadata"]["name"] for d in rolled_out.of_kind("Deployment")}
    pods = kubectl.items("pods")
    for name, deployment in deployments.items():
        wanted = deployment["spec"]["replicas"]
        assert deployment["status"].get("availableReplicas") == wanted, name
        serving = [p for p in pods if p["metadata"]["labels"].get(APP) == name and ready(p)]
        assert len(serving) == wanted, name
        assert {p["spec"]["nodeName"] for p in serving} <= set(nodes), name


def test_the_ledger_claim_binds_to_the_volume_provided(
    rolled_out: Applied, kubectl: Kubectl
) -> None:
    (claim,) = rolled_out.of_kind("PersistentVolumeClaim")
    stored = kubectl.get("persistentvolumeclaim", claim["metadata"]["name"])
    assert stored["status"]["phase"] == "Bound"
    assert stored["spec"]["volumeName"] == "mesh-payment-ledger"
    volume = kubectl.get("persistentvolume", "mesh-payment-ledger")
    assert volume["status"]["phase"] == "Bound"
