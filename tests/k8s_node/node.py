"""What tests/k8s_node use to reach the pods on the real node: the process of a pod's container
(from /proc: the rehearsal's PID namespace holds only what it started), a relay into a pod's
network namespace for its loopback-only admin port, and `kubectl port-forward`."""

from __future__ import annotations

import base64
import re
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.services.topology import REPLICAS
from tests.compose.probes import MESH_SERVICES, relay_entries
from tests.k8s.cluster import Kubectl

Obj = dict[str, Any]


def container_env(pod: Obj) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def container_pid(pod_name: str) -> int:
    """The PID of the process the kubelet started for `pod_name` (HOSTNAME in its environment
    is the pod's name; the pause process has none)."""
    marker = f"HOSTNAME={pod_name}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ:
            return int(proc.name)
    raise AssertionError(f"no process of pod {pod_name} in this PID namespace")


def mesh_pods(kubectl: Kubectl) -> dict[str, Obj]:
    """The mesh's running pods by the instance name the chaos runner uses: a service's first pod by
    the service's name, a replica's `profile-2` (grpc_resilience_mesh.services.topology.REPLICAS); a
    second pod of a service the embedded mesh runs once (gateway, notification) is left out."""
    by_service: dict[str, list[Obj]] = {}
    for pod in kubectl.items("pods"):
        service = container_env(pod).get("SERVICE")
        if service in MESH_SERVICES and pod["status"].get("phase") == "Running":
            by_service.setdefault(service, []).append(pod)
    named = {}
    for service, pods in by_service.items():
        pods.sort(key=lambda p: p["metadata"]["name"])
        for k, pod in enumerate(pods[: REPLICAS.get(service, 1)], start=1):
            named[service if k == 1 else f"{service}-{k}"] = pod
    return named


@contextmanager
def port_forward(kubectl: Kubectl, target: str, port: int) -> Iterator[int]:
    """`kubectl port-forward TARGET :PORT`: the local port it listens on."""
    proc = subprocess.Popen(
        [kubectl.binary, "--namespace", kubectl.namespace, "port-forward", target, f":{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:PORT -> PORT"
        found = re.search(r"127\.0\.0\.1:(\d+) -> ", line)
        if not found:
            proc.terminate()
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"kubectl port-forward {target}: {line!r} {err}")
        yield int(found.group(1))
    finally:
        proc.terminate()
        proc.wait(10)


def api_key(kubectl: Kubectl) -> str:
    secret = kubectl.get("secret", "gateway-api-keys")
    return base64.b64decode(secret["data"]["MESH_API_KEYS"]).decode().split(",")[0]


@contextmanager
def chaos_target(kubectl: Kubectl) -> Iterator[str]:
    """`mesh chaos run --target` for the cluster: the gateway pod and Toxiproxy's Service
    through port-forwards, each mesh pod's metrics at its pod address (routed in this network
    namespace) and its admin port through a relay in the pod's own network namespace."""
    pods = mesh_pods(kubectl)
    with ExitStack() as stop:
        gateway = stop.enter_context(
            port_forward(kubectl, f"pod/{pods['gateway']['metadata']['name']}", 50051)
        )
        toxiproxy = stop.enter_context(port_forward(kubectl, "svc/toxiproxy", 8474))
        entries = [
            f"toxiproxy=http://127.0.0.1:{toxiproxy}",
            f"gateway=127.0.0.1:{gateway}",
            f"api_key={api_key(kubectl)}",
        ]
        for instance, pod in sorted(pods.items()):
            pid = container_pid(pod["metadata"]["name"])
            env = container_env(pod)
            entries += relay_entries(stop, instance, pid, pod["status"]["podIP"], env)
        yield ",".join(entries)
