"""The compose file's Jaeger service, run for real: its health check command and the OTLP
address the mesh services are given work against the real Jaeger v2 binary, on the very ports
the compose file names (in a network namespace of their own, see compose_probe)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from typing import Any

import pytest

from tests.integration.jaeger.compose_probe import NO_NAMESPACE
from tests.integration.jaeger.jaeger_process import ROOT, jaeger_or_skip
from tests.unit.deploy.deploy_sources import load_compose

IMAGE_ENV = {"JAEGER_LISTEN_HOST": "0.0.0.0"}
"""The image's own ENV (cmd/jaeger/Dockerfile): what makes its listeners reachable at all."""


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s", text)
    assert match, f"not a duration in seconds: {text!r}"
    return float(match[1])


def _run_probe(spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.jaeger.compose_probe", json.dumps(spec)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the probe and the Jaeger it starts: one group to stop
    )
    try:
        out, err = proc.communicate(timeout=spec["deadline_s"] + 60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    if proc.returncode == NO_NAMESPACE:
        pytest.skip(f"no private network namespace: {json.loads(out)['no_namespace']}")
    assert proc.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture(scope="module")
def jaeger_service() -> dict[str, Any]:
    compose = load_compose()
    service: dict[str, Any] = compose["services"]["jaeger"]
    service["_mesh_env"] = compose["services"]["gateway"]["environment"]
    return service


def test_the_compose_health_check_and_otlp_port_work_against_the_real_jaeger(
    jaeger_service: dict[str, Any],
) -> None:
    binary = jaeger_or_skip()
    # The image's entrypoint with no arguments: the built-in all-in-one configuration. A
    # command, entrypoint or config mount added to the compose file must be run here too.
    assert not {"command", "entrypoint", "volumes"} & jaeger_service.keys(), jaeger_service
    check = jaeger_service["healthcheck"]
    assert check["test"][0] == "CMD", check["test"]
    argv = check["test"][1:]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not on this machine's PATH (the image has BusyBox's)")
    # The services reach Jaeger by its compose hostname; here that name means loopback.
    otlp = jaeger_service["_mesh_env"]["OTEL_EXPORTER_OTLP_ENDPOINT"]
    assert otlp.startswith("http://jaeger:"), otlp
    (ui_port,) = [p.rsplit(":", 1)[1] for p in jaeger_service["ports"]]
    budget_s = _seconds(check["start_period"]) + check["retries"] * _seconds(check["interval"])
    spec = {
        "jaeger": str(binary),
        "health": argv,
        "health_timeout_s": _seconds(check["timeout"]),
        "otlp_endpoint": otlp.replace("://jaeger:", "://127.0.0.1:"),
        "query_url": f"http://127.0.0.1:{ui_port}",
        "env": {**IMAGE_ENV, **jaeger_service.get("environment", {})},
        "deadline_s": budget_s,
    }
    result = _run_probe(spec)
    assert result["before"] != 0, "the health check passed with no Jaeger running"
    assert "healthy_after_s" in result, (result["checks"], result["log_tail"])
    assert result["healthy_after_s"] < budget_s
    assert (result["GET"], result["HEAD"]) == (200, 200)  # BusyBox's wget GETs, GNU's HEADs
    assert result.get("span") == [["compose-probe", "compose-probe"]], result["log_tail"]
    assert result["after"] != 0, "the health check still passed after Jaeger stopped"
