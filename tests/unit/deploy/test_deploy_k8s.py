"""deploy/k8s: every overlay assembles into objects the Kubernetes schemas accept, and the
workloads carry probes, resources and a non-root security context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from grpc_resilience_mesh.services import safe_yaml
from grpc_resilience_mesh.services.topology import REPLICAS
from tests.unit.deploy.deploy_sources import K8S, MESH_SERVICES, OVERLAYS, yaml_documents
from tests.unit.deploy.kustomize import containers, pod_spec, render

K8S_VERSION = kubernetes_validate.latest_version()
STATELESS = ("gateway", "profile", "recommendation")


def objects_of(overlay: str) -> list[dict[str, Any]]:
    return render(OVERLAYS[overlay])


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return objects_of(request.param)


def test_there_are_exactly_the_two_overlays() -> None:
    assert {p.name for p in (K8S / "overlays").iterdir() if p.is_dir()} == set(OVERLAYS)


def test_assembled_objects_validate_against_the_kubernetes_schemas(overlay: list[Any]) -> None:
    for obj in overlay:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def manifest_files() -> list[Path]:
    """Every YAML file under deploy/k8s but kustomizations and patches (fragments, validated
    once merged, with their overlay)."""
    patches = {
        (kustomization.parent / patch["path"]).resolve()
        for kustomization in K8S.rglob("kustomization.yaml")
        for patch in safe_yaml.load_file(str(kustomization)).get("patches", [])
    }
    return sorted(
        p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml" and p not in patches
    )


@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_every_manifest_file_validates_on_its_own(path: Path) -> None:
    for doc in yaml_documents(path.read_text(), str(path)):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_objects_are_unique_and_in_the_mesh_namespace(overlay: list[Any]) -> None:
    ids = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in overlay]
    assert len(ids) == len(set(ids))
    for kind, namespace, name in ids:
        assert namespace == ("mesh" if kind != "Namespace" else None), (kind, name)
    assert by_kind(overlay, "Namespace").keys() == {"mesh"}


def test_mesh_deployments_and_services_exist(overlay: list[Any]) -> None:
    deployments, services = by_kind(overlay, "Deployment"), by_kind(overlay, "Service")
    assert set(MESH_SERVICES) | {"jaeger"} <= deployments.keys()
    assert set(MESH_SERVICES) | {"jaeger"} <= services.keys()


def test_every_container_has_probes_resources_and_runs_as_non_root(overlay: list[Any]) -> None:
    for deployment in by_kind(overlay, "Deployment").values():
        spec = pod_spec(deployment)
        assert spec is not None
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] > 0
        for container in containers(deployment):
            name = f"{deployment['metadata']['name']}/{container['name']}"
            assert "readinessProbe" in container and "livenessProbe" in container, name
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= container["resources"][bound].keys(), name
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"]["drop"] == ["ALL"], name


def test_mesh_services_use_native_grpc_probes(overlay: list[Any]) -> None:
    deployments = by_kind(overlay, "Deployment")
    for name in MESH_SERVICES:
        (container,) = containers(deployments[name])
        port = container["ports"][0]["containerPort"]
        assert container["readinessProbe"]["grpc"] == {"port": port}
        assert container["livenessProbe"]["grpc"] == {"port": port}


def test_stateless_services_run_replicas_and_payment_runs_one_writer(overlay: list[Any]) -> None:
    deployments = by_kind(overlay, "Deployment")
    for name in STATELESS:
        assert deployments[name]["spec"]["replicas"] > 1, name
    payment = deployments["payment"]["spec"]
    assert payment["replicas"] == 1
    assert payment["strategy"] == {"type": "Recreate"}
    (volume,) = payment["template"]["spec"]["volumes"]
    claim = by_kind(overlay, "PersistentVolumeClaim")[volume["persistentVolumeClaim"]["claimName"]]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    (container,) = payment["template"]["spec"]["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PAYMENT_DB_PATH"].startswith(mount["mountPath"] + "/")


def test_selectors_and_references_resolve(overlay: list[Any]) -> None:
    deployments = by_kind(overlay, "Deployment")
    config_maps, secrets = by_kind(overlay, "ConfigMap"), by_kind(overlay, "Secret")
    for deployment in deployments.values():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
        spec = pod_spec(deployment)
        assert spec is not None
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in config_maps
        for container in containers(deployment):
            for entry in container.get("env", []):
                ref = entry.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in secrets[ref["name"]]["stringData"]
    for svc in by_kind(overlay, "Service").values():
        selected = [
            d
            for d in deployments.values()
            if svc["spec"]["selector"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(selected) == 1, svc["metadata"]["name"]
        named = {p["name"] for c in containers(selected[0]) for p in c.get("ports", [])}
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in named, (svc["metadata"]["name"], port)


def test_direct_overlay_has_no_toxiproxy_at_all() -> None:
    objects = objects_of("direct")
    assert "toxiproxy" not in yaml.safe_dump_all(objects)


def test_chaos_overlay_adds_toxiproxy_with_its_config_map() -> None:
    objects = objects_of("chaos")
    (config_map,) = by_kind(objects, "ConfigMap").values()
    assert config_map["metadata"]["name"].startswith("toxiproxy-config-")
    assert set(config_map["data"]) == {"toxiproxy.json"}
    toxiproxy = by_kind(objects, "Deployment")["toxiproxy"]
    assert toxiproxy["spec"]["replicas"] == 1
    (container,) = containers(toxiproxy)
    assert "-config=/etc/toxiproxy/toxiproxy.json" in container["args"]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/toxiproxy"


def test_images_are_pinned(overlay: list[Any]) -> None:
    for deployment in by_kind(overlay, "Deployment").values():
        for container in containers(deployment):
            image = container["image"]
            assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image


def test_replicated_services_run_two_pods_behind_a_headless_service(
    overlay: list[dict[str, Any]],
) -> None:
    """gRPC's round_robin balances over the pods only if DNS names each of them: a ClusterIP
    would pin a caller's one connection, and so every call, to one pod."""
    deployments, services = by_kind(overlay, "Deployment"), by_kind(overlay, "Service")
    for name, count in REPLICAS.items():
        assert deployments[name]["spec"]["replicas"] == count, name
        assert services[name]["spec"].get("clusterIP") == "None", name
