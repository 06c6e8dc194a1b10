"""Enough of `kustomize build` for deploy/k8s, and loud about everything else.

Supported kustomization fields: resources (files and directories), namespace, labels (pairs
on metadata only), images, patches (strategic merge, optional target) and configMapGenerator
(files, literals; a content-hash name suffix and rewritten references). Anything else raises
KustomizeError, so the kustomization files stay within what these tests can assemble.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from deploy_sources import yaml_documents

from mesh import safe_yaml

Obj = dict[str, Any]

SUPPORTED = {
    "apiVersion",
    "kind",
    "resources",
    "namespace",
    "labels",
    "images",
    "patches",
    "configMapGenerator",
}
CLUSTER_SCOPED = {
    "Namespace",
    "PersistentVolume",
    "StorageClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "PriorityClass",
}
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}
# patchMergeKey of the list fields a patch here may touch (from the Kubernetes API).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
}


class KustomizeError(ValueError):
    """A kustomization uses something this assembler does not implement, or is wrong."""


def build(root: Path) -> list[Obj]:
    """The objects `kustomize build root` would print (names, namespaces, merged fields)."""
    root = root.resolve()
    kustomization = safe_yaml.load_file(str(root / "kustomization.yaml"))
    unsupported = set(kustomization) - SUPPORTED
    if unsupported:
        raise KustomizeError(f"{root}: unsupported fields {sorted(unsupported)}")
    objects: list[Obj] = []
    for entry in kustomization.get("resources", []):
        path = (root / entry).resolve()
        if path.is_dir():
            objects += build(path)
        else:
            path = _inside(root, entry)
            objects += yaml_documents(path.read_text(), str(path))
    renamed: dict[str, str] = {}
    for generator in kustomization.get("configMapGenerator", []):
        config_map = _generate_config_map(root, generator)
        renamed[generator["name"]] = config_map["metadata"]["name"]
        objects.append(config_map)
    for patch in kustomization.get("patches", []):
        _apply_patch(root, patch, objects)
    for obj in objects:
        _set_namespace(obj, kustomization.get("namespace"))
        _add_labels(obj, kustomization.get("labels", []))
        _set_images(obj, kustomization.get("images", []))
        _rename_config_map_refs(obj, renamed)
    return objects


def _inside(root: Path, entry: str) -> Path:
    """kustomize's default load restrictor: no file outside the kustomization's folder."""
    path = (root / entry).resolve()
    if not path.is_relative_to(root):
        raise KustomizeError(f"{root}: {entry} is outside the kustomization root")
    return path


def _generate_config_map(root: Path, generator: Obj) -> Obj:
    unsupported = set(generator) - {"name", "files", "literals"}
    if unsupported:
        raise KustomizeError(f"configMapGenerator {generator['name']}: {sorted(unsupported)}")
    data: dict[str, str] = {}
    for entry in generator.get("files", []):
        key, _, source = entry.rpartition("=") if "=" in entry else ("", "", entry)
        path = _inside(root, source)
        data[key or path.name] = path.read_text()
    for literal in generator.get("literals", []):
        key, _, value = literal.partition("=")
        data[key] = value
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{generator['name']}-{digest}"},
        "data": data,
    }


def _apply_patch(root: Path, patch: Obj, objects: list[Obj]) -> None:
    unsupported = set(patch) - {"path", "target"}
    if unsupported:
        raise KustomizeError(f"patch {patch}: unsupported fields {sorted(unsupported)}")
    body = safe_yaml.load_file(str(_inside(root, patch["path"])))
    if not isinstance(body, dict):
        raise KustomizeError(f"{patch['path']}: only strategic merge patches are supported")
    target = patch.get("target") or {"kind": body["kind"], "name": body["metadata"]["name"]}
    if set(target) - {"kind", "name", "namespace"}:
        raise KustomizeError(f"{patch['path']}: target selects by kind, name, namespace only")
    body = copy.deepcopy(body)
    for key in ("name", "namespace"):
        body.get("metadata", {}).pop(key, None)
    hits = [i for i, obj in enumerate(objects) if _selected(obj, target)]
    if not hits:
        raise KustomizeError(f"{patch['path']}: no object matches {target}")
    for i in hits:
        objects[i] = strategic_merge(objects[i], body)


def _selected(obj: Obj, target: Obj) -> bool:
    meta = obj.get("metadata", {})
    return (
        obj.get("kind") == target.get("kind", obj.get("kind"))
        and meta.get("name") == target.get("name", meta.get("name"))
        and meta.get("namespace") == target.get("namespace", meta.get("namespace"))
    )


def strategic_merge(base: Any, patch: Any, field: str = "") -> Any:
    """Kubernetes strategic merge for the fields used here: maps merge, null deletes, lists of
    objects merge on their patchMergeKey, lists of scalars are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            if key.startswith("$"):
                raise KustomizeError(f"directive {key} is not supported")
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list):
        if not any(isinstance(item, dict) for item in base + patch):
            return copy.deepcopy(patch)
        if field not in MERGE_KEYS:
            raise KustomizeError(f"list {field!r}: its merge key is unknown to this assembler")
        key = MERGE_KEYS[field]
        merged_list = copy.deepcopy(base)
        for item in patch:
            index = next((i for i, old in enumerate(merged_list) if old[key] == item[key]), None)
            if index is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[index] = strategic_merge(merged_list[index], item, field)
        return merged_list
    return copy.deepcopy(patch)


def _set_namespace(obj: Obj, namespace: str | None) -> None:
    if namespace and obj["kind"] not in CLUSTER_SCOPED:
        obj["metadata"]["namespace"] = namespace


def _add_labels(obj: Obj, labels: list[Obj]) -> None:
    for entry in labels:
        if entry.get("includeSelectors") or entry.get("includeTemplates"):
            raise KustomizeError("labels: only metadata labels are supported")
        obj["metadata"].setdefault("labels", {}).update(entry["pairs"])


def pod_spec(obj: Obj) -> Obj | None:
    if obj["kind"] in WORKLOADS:
        spec: Obj = obj["spec"]["template"]["spec"]
        return spec
    return obj["spec"] if obj["kind"] == "Pod" else None


def containers(obj: Obj) -> list[Obj]:
    spec = pod_spec(obj)
    return [] if spec is None else spec.get("initContainers", []) + spec["containers"]


def _set_images(obj: Obj, images: list[Obj]) -> None:
    for container in containers(obj):
        name, tag, digest = split_image(container["image"])
        for image in images:
            if image["name"] == name:
                name = image.get("newName", name)
                tag = image.get("newTag", tag)
                digest = image.get("digest", digest)
        container["image"] = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def split_image(image: str) -> tuple[str, str, str]:
    """name[:tag][@digest] -> (name, tag, digest); a registry's :port is part of the name."""
    rest, _, digest = image.partition("@")
    name, sep, tag = rest.rpartition(":")
    if not sep or "/" in tag:
        return rest, "", digest
    return name, tag, digest


def _rename_config_map_refs(obj: Obj, renamed: dict[str, str]) -> None:
    spec = pod_spec(obj)
    if spec is None or not renamed:
        return
    refs = [v["configMap"] for v in spec.get("volumes", []) if "configMap" in v]
    for container in containers(obj):
        refs += [e["configMapRef"] for e in container.get("envFrom", []) if "configMapRef" in e]
        refs += [
            e["valueFrom"]["configMapKeyRef"]
            for e in container.get("env", [])
            if "configMapKeyRef" in e.get("valueFrom", {})
        ]
    for ref in refs:
        ref["name"] = renamed.get(ref["name"], ref["name"])
