"""mesh-xds's admin on a shared host (review round 4, item 4): another local process, or a page
whose DNS name was rebound to 127.0.0.1, can neither read the plane's config nor re-point an
edge. Only GET /healthz, which readiness probes ask, is open; the Host must be loopback."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.xds.plane import Plane, one_edge, running_plane

BEFORE = one_edge("payment", ["127.0.0.1:26054"])
RELAY = one_edge("payment", ["127.0.0.1:1"])


def ask(
    plane: Plane,
    method: str,
    path: str,
    *,
    token: str | None = None,
    host: str | None = None,
    body: bytes | None = None,
) -> tuple[int, bytes]:
    """One admin request with exactly these headers; (status, body)."""
    address, port = plane.admin.rsplit(":", 1)
    connection = http.client.HTTPConnection(address, int(port), timeout=5)
    headers = {"Host": host or plane.admin}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[Plane]:
    with running_plane(tmp_path, BEFORE) as serving:
        yield serving


@pytest.mark.parametrize("token", [None, "not-the-token-at-all-x"], ids=["none", "wrong"])
def test_without_the_token_nothing_is_read_or_changed(plane: Plane, token: str | None) -> None:
    version = json.loads(ask(plane, "GET", "/healthz")[1])["version"]
    put = ask(plane, "PUT", "/config", token=token, body=json.dumps(RELAY).encode())
    config = ask(plane, "GET", "/config", token=token)
    resources = ask(plane, "GET", "/resources?node=gateway", token=token)
    assert [put[0], config[0], resources[0]] == [401, 401, 401]
    assert b"Authorization: Bearer" in put[1]
    assert b"26054" not in config[1] + resources[1]
    assert plane.config() == BEFORE
    assert json.loads(ask(plane, "GET", "/healthz")[1])["version"] == version


def test_a_host_that_is_not_loopback_is_refused_even_with_the_token(plane: Plane) -> None:
    port = plane.admin.rsplit(":", 1)[1]
    for host in ("rebound.example", f"rebound.example:{port}", "127.0.0.1:1"):
        put = ask(plane, "PUT", "/config", token=plane.token, host=host, body=b"{}")
        assert put[0] == 403, host
        assert ask(plane, "GET", "/config", token=plane.token, host=host)[0] == 403, host
    assert plane.config() == BEFORE


def test_with_the_token_and_a_loopback_host_the_admin_works(plane: Plane) -> None:
    port = plane.admin.rsplit(":", 1)[1]
    put = ask(
        plane,
        "PUT",
        "/config",
        token=plane.token,
        host=f"localhost:{port}",
        body=json.dumps(RELAY).encode(),
    )
    assert put[0] == 200
    status, body = ask(plane, "GET", "/resources?node=gateway", token=plane.token)
    assert status == 200 and b"127.0.0.1" in body
    assert plane.config() == RELAY
