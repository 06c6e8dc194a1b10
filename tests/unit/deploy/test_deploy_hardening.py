"""Every container starts under its hardening: what docker-compose.yml (and deploy/k8s) asks of
each image agrees with what the image does, per pinned_images.py (read from each image's sources).

No capabilities, no privilege escalation and a read-only root for all. So: every process runs as
a numeric non-root user from the start (an entrypoint that steps down from root would need the
capabilities it lost); what an image writes is a tmpfs or a volume its user owns; every health
check or exec probe runs a binary the image has, and asks the port the service listens on.
"""

from __future__ import annotations

import re
import shlex
from typing import Any
from urllib.parse import urlsplit

import pytest

from grpc_resilience_mesh.services.topology import TOXIPROXY_API_PORT, service
from tests.unit.deploy.deploy_sources import (
    DOCKERFILE,
    JAEGER_HEALTH_PORT,
    OVERLAYS,
    load_compose,
    read_dotenv,
)
from tests.unit.deploy.kustomize import containers, pod_spec, render
from tests.unit.deploy.pinned_images import IMAGES, PinnedImage

SERVICES: dict[str, dict[str, Any]] = load_compose()["services"]


def image_of(svc: dict[str, Any]) -> PinnedImage:
    return IMAGES[svc["image"]]


def runs_as(svc: dict[str, Any]) -> str:
    """uid:gid the container's process has: Compose's `user`, else the image's USER."""
    user = svc.get("user") or image_of(svc).user or "0"
    return user if ":" in user else f"{user}:0"


def resolve(image: PinnedImage, command: str) -> str | None:
    """The path a command name runs in the image, as execvp would find it; None if absent."""
    if "/" in command:
        return command if command in image.executables else None
    return next(
        (f"{d}/{command}" for d in image.search_path if f"{d}/{command}" in image.executables),
        None,
    )


def check_argv(image: PinnedImage, test: list[str]) -> list[str]:
    """A Compose health check's test as the argv that runs inside the container."""
    kind, *rest = test
    if kind == "CMD-SHELL":
        assert image.shell, "CMD-SHELL needs /bin/sh, which the image lacks"
        return ["/bin/sh", "-c", *rest]
    assert kind == "CMD", test
    return rest


def test_every_image_is_pinned_in_dotenv_and_described() -> None:
    dotenv = read_dotenv()
    pinned = {v for k, v in dotenv.items() if k.endswith("_IMAGE")}
    assert pinned == set(IMAGES), "each .env image needs a row in pinned_images.py, read anew"
    assert {svc["image"] for svc in SERVICES.values()} == set(IMAGES)
    for overlay in OVERLAYS.values():
        for obj in render(overlay):
            for container in containers(obj):
                assert container["image"] in IMAGES, container["image"]


def test_mesh_image_row_is_what_deploy_dockerfile_builds() -> None:
    text = DOCKERFILE.read_text()
    uid = re.search(r"^ARG MESH_UID=(\d+)$", text, re.M)
    assert uid is not None
    row = IMAGES[read_dotenv()["MESH_IMAGE"]]
    assert row.user == f"{uid[1]}:{uid[1]}"
    assert re.search(r"^USER \$\{MESH_UID\}:\$\{MESH_UID\}$", text, re.M)
    assert "chown ${MESH_UID}:${MESH_UID} /data" in text and row.owners["/data"] == row.user
    assert "ENV PATH=/opt/venv/bin:$PATH" in text and row.search_path[0] == "/opt/venv/bin"
    assert "python -m venv --without-pip /opt/venv" in text  # /opt/venv/bin/python


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_no_capabilities_no_escalation_read_only_root(name: str) -> None:
    svc = SERVICES[name]
    assert svc.get("cap_drop") == ["ALL"]
    assert not svc.get("cap_add") and not svc.get("privileged")
    assert "no-new-privileges:true" in svc.get("security_opt", [])
    assert svc.get("read_only") is True


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_runs_as_a_numeric_non_root_user_from_the_start(name: str) -> None:
    svc, image = SERVICES[name], image_of(SERVICES[name])
    user = runs_as(svc)
    assert re.fullmatch(r"[1-9]\d*:\d+", user), f"{name} would run as {user}"
    if image.user is not None:
        assert user.split(":")[0] == image.user.split(":")[0], "keep the image's own uid"
    if image.step_down is not None:
        # Its entrypoint switches user only when started as uid 0; starting as the very user it
        # would switch to skips the switch and the capabilities it needs (all dropped here).
        assert user == image.step_down.to
        assert not image.step_down.needs & set(svc.get("cap_add", []))


def test_redis_runs_as_the_images_redis_user_so_the_entrypoint_does_not_switch() -> None:
    redis = SERVICES["redis"]
    assert redis["user"] == "999:1000"
    assert redis["command"][0] == "redis-server"  # the entrypoint's step-down case, if root


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_what_the_image_writes_is_a_tmpfs_or_a_volume_its_user_owns(name: str) -> None:
    svc, image = SERVICES[name], image_of(SERVICES[name])
    named_volumes = {
        target: source
        for source, target, *_ in (v.split(":") for v in svc.get("volumes", []))
        if not source.startswith((".", "/"))
    }
    tmpfs = set(svc.get("tmpfs", []))
    for path in image.writes:
        assert path in tmpfs or path in named_volumes, f"{name} writes {path}, read-only here"
    for target in named_volumes:
        # A new named volume starts as a copy of the image's directory, owner included.
        assert image.owners.get(target) == runs_as(svc), f"{name}: {target} owner"
    assert not tmpfs & set(named_volumes)


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_health_check_runs_a_binary_the_image_has(name: str) -> None:
    svc, image = SERVICES[name], image_of(SERVICES[name])
    argv = check_argv(image, svc["healthcheck"]["test"])
    assert resolve(image, argv[0]) is not None, f"{name}: {argv[0]} is not in {svc['image']}"
    if argv[:2] == ["/bin/sh", "-c"]:
        first = shlex.split(argv[2])[0]
        assert resolve(image, first) is not None, f"{name}: {first} is not in {svc['image']}"


def test_health_checks_ask_the_port_the_service_listens_on() -> None:
    redis = SERVICES["redis"]
    test = redis["healthcheck"]["test"]
    assert test[1:] == ["redis-cli", "-p", str(service("redis").port), "ping"]
    assert redis["command"][redis["command"].index("--port") + 1] == str(service("redis").port)

    toxiproxy = SERVICES["toxiproxy"]
    url = urlsplit(toxiproxy["environment"]["TOXIPROXY_URL"])  # read by `toxiproxy-cli list`
    # The API listens on its own network's alias of Toxiproxy (-host=), not on loopback.
    assert (url.hostname, url.port) == ("toxiproxy-api", TOXIPROXY_API_PORT)
    assert f"-host={url.hostname}" in toxiproxy["command"]
    assert f"-port={TOXIPROXY_API_PORT}" in toxiproxy["command"]

    smtp = SERVICES["smtp"]
    assert smtp["healthcheck"]["test"] == ["CMD", "/mailpit", "readyz"]  # reads MP_UI_BIND_ADDR
    ui_port = smtp["environment"]["MP_UI_BIND_ADDR"].rsplit(":", 1)[1]
    assert smtp["ports"][0].rsplit(":", 1)[1] == ui_port
    assert smtp["environment"]["MP_SMTP_BIND_ADDR"].endswith(f":{service('smtp').port}")

    jaeger = SERVICES["jaeger"]["healthcheck"]["test"]
    url = urlsplit(jaeger[-1])
    assert (url.hostname, url.port, url.path) == ("127.0.0.1", JAEGER_HEALTH_PORT, "/status")


def workload_containers(overlay: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(workload name, pod spec, container) for every container of the overlay."""
    found = []
    for obj in render(OVERLAYS[overlay]):
        spec = pod_spec(obj)
        if spec is not None:
            for container in containers(obj):
                found.append((obj["metadata"]["name"], spec, container))
    return found


@pytest.mark.parametrize("overlay", sorted(OVERLAYS))
def test_k8s_runs_each_image_as_compose_does_and_execs_only_what_it_has(overlay: str) -> None:
    compose_user = {svc["image"]: runs_as(svc) for svc in SERVICES.values()}
    for name, spec, container in workload_containers(overlay):
        image = IMAGES[container["image"]]
        security = spec["securityContext"]
        pod_user = f"{security['runAsUser']}:{security['runAsGroup']}"
        assert pod_user == compose_user[container["image"]], name
        mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
        assert set(image.writes) <= mounts, f"{name} writes {image.writes}"
        execs = [
            handler["exec"]["command"]
            for handler in (
                container.get("readinessProbe", {}),
                container.get("livenessProbe", {}),
                container.get("startupProbe", {}),
                container.get("lifecycle", {}).get("preStop", {}),
            )
            if "exec" in handler
        ]
        for command in execs:
            assert resolve(image, command[0]) is not None, f"{name}: {command[0]}"
