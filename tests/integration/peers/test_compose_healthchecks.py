"""The Compose healthchecks of Toxiproxy and Mailpit, run for real against the binaries that
`make peers` builds at the pinned versions, with the environment and files Compose gives them.

In Compose one failing healthcheck stops every service that depends on it, so a check that
cannot work here fails. Only what cannot exist outside Compose is changed, by the test: the
image's path of a binary becomes .peers/bin/NAME, and the stack's hostnames and 0.0.0.0 become
127.0.0.1 (a port another process holds becomes a free one).
"""

from __future__ import annotations

import json
import os
import smtplib
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy
from tests.support.peers import peer_binary
from tests.support.polling import wait_until
from tests.unit.deploy.deploy_sources import load_compose, load_toxiproxy_json

pytestmark = pytest.mark.timeout(60)
IMAGE_BINARIES = {"/toxiproxy-cli": "toxiproxy-cli", "/mailpit": "mailpit"}


def service(name: str) -> dict[str, Any]:
    found: dict[str, Any] = load_compose()["services"][name]
    return found


def on_loopback(address: str) -> str:
    """host:port with the host on 127.0.0.1, and the port moved if something already holds it."""
    port = int(address.rsplit(":", 1)[1])
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            port = free_port("127.0.0.1")
    return f"127.0.0.1:{port}"


def healthcheck(name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the service's healthcheck `test` (CMD form) as Compose would, in `env`."""
    test = service(name)["healthcheck"]["test"]
    assert test[0] == "CMD", f"{name}: the image has no shell, so only CMD can run: {test}"
    binary = test[1]
    command = [str(peer_binary(IMAGE_BINARIES.get(binary, binary))), *test[2:]]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=20)


@pytest.fixture
def toxiproxy_config(tmp_path: Path) -> list[dict[str, Any]]:
    """deploy/toxiproxy.json with its compose hostnames and 0.0.0.0 mapped to loopback."""
    proxies = load_toxiproxy_json()
    for proxy in proxies:
        proxy["listen"] = on_loopback(proxy["listen"])
        proxy["upstream"] = "127.0.0.1:" + proxy["upstream"].rsplit(":", 1)[1]
    return proxies


def test_toxiproxy_loads_deploy_config_and_its_healthcheck_passes(
    tmp_path: Path, toxiproxy_config: list[dict[str, Any]]
) -> None:
    config = tmp_path / "toxiproxy.json"
    config.write_text(json.dumps(toxiproxy_config))
    compose = service("toxiproxy")
    assert "-config=/etc/toxiproxy/toxiproxy.json" in compose["command"]
    with RealToxiproxy(config=config, binary=peer_binary("toxiproxy-server")) as real:
        proxies = ToxiproxyClient(real.base_url).proxies()
        assert {name: p["enabled"] for name, p in proxies.items()} == {
            p["name"]: p["enabled"] for p in toxiproxy_config
        }
        # The stack's URL (http://toxiproxy-api:8474, the API's network alias) on loopback.
        stack_url = urlsplit(compose["environment"]["TOXIPROXY_URL"])
        assert stack_url.port == 8474, stack_url
        url = stack_url._replace(netloc=f"127.0.0.1:{real.port}").geturl()
        done = healthcheck("toxiproxy", {**os.environ, "TOXIPROXY_URL": url})
        assert done.returncode == 0, done.stdout + done.stderr
        for name in proxies:
            assert name in done.stdout
    # The same check against a stopped server fails, as Compose needs it to.
    done = healthcheck("toxiproxy", {**os.environ, "TOXIPROXY_URL": url})
    assert done.returncode != 0


@pytest.fixture
def mailpit(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Real Mailpit with the compose environment (addresses on loopback); that environment."""
    compose_env = service("smtp")["environment"]
    env = {key: on_loopback(value) for key, value in compose_env.items()}
    # Test-only: no database path means a temp file (as in the image's tmpfs), and no attempt
    # to reach the internet for a version check.
    run_env = {**os.environ, **env, "TMPDIR": str(tmp_path), "MP_DISABLE_VERSION_CHECK": "true"}
    proc = subprocess.Popen(
        [str(peer_binary("mailpit"))],
        env=run_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield run_env
    finally:
        proc.terminate()
        proc.wait(10)


def smtp_greets(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with smtplib.SMTP(host, int(port), timeout=2) as smtp:
            return smtp.noop()[0] == 250
    except (OSError, smtplib.SMTPException):
        return False


def test_mailpit_readyz_and_smtp_port_work_as_compose_names_them(mailpit: dict[str, str]) -> None:
    wait_until(
        lambda: healthcheck("smtp", mailpit).returncode == 0,
        timeout_s=20,
        what="mailpit readyz healthcheck passing",
    )
    assert smtp_greets(mailpit["MP_SMTP_BIND_ADDR"])


def test_healthcheck_of_a_missing_server_fails(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    env = {**os.environ, "MP_UI_BIND_ADDR": f"127.0.0.1:{port}", "TMPDIR": str(tmp_path)}
    assert healthcheck("smtp", env).returncode != 0
    with pytest.raises(ToxiproxyError):
        ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=1).proxies()
