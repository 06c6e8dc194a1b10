"""Toxiproxy 2.12 HTTP API conformance over raw HTTP: paths, verbs, statuses, bodies, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    BOTH_SERVERS,
    ApiServer,
    error_of,
    http,
)

pytestmark = [pytest.mark.timeout(20), BOTH_SERVERS]


def create(server: ApiServer, upstream_port: int, name: str = "p") -> dict[str, Any]:
    body = {"name": name, "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{upstream_port}"}
    status, _, data = http(server, "POST", "/proxies", body)
    assert status == 201
    return dict(json.loads(data))


def test_version_is_json_like_toxiproxy(toxiproxy: ApiServer) -> None:
    status, headers, body = http(toxiproxy, "GET", "/version")
    assert status == 200
    assert headers["Content-Type"] == "application/json;charset=utf-8"
    assert body == b'{"version": "2.12.0"}\n'


def test_proxy_lifecycle(toxiproxy: ApiServer, echo_port: int) -> None:
    assert http(toxiproxy, "GET", "/proxies")[2] == b"{}"
    proxy = create(toxiproxy, echo_port)
    assert list(proxy) == ["name", "listen", "upstream", "enabled", "Logger", "toxics"]
    assert proxy["enabled"] is True and proxy["toxics"] == []
    assert not proxy["listen"].endswith(":0")
    status, headers, body = http(toxiproxy, "GET", "/proxies")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"p": proxy}
    assert json.loads(http(toxiproxy, "GET", "/proxies/p")[2]) == proxy
    for method in ("PATCH", "POST"):
        status, _, body = http(toxiproxy, method, "/proxies/p", {"enabled": False})
        assert status == 200 and json.loads(body)["enabled"] is False
        status, _, body = http(toxiproxy, method, "/proxies/p", {"enabled": True})
        assert json.loads(body)["listen"] == proxy["listen"]
    assert http(toxiproxy, "DELETE", "/proxies/p")[0] == 204
    assert http(toxiproxy, "GET", "/proxies/p")[0] == 404


def test_proxy_errors(toxiproxy: ApiServer, echo_port: int) -> None:
    create(toxiproxy, echo_port)
    status, headers, body = http(toxiproxy, "POST", "/proxies", raw=b"{nope")
    assert status == 400 and headers["Content-Type"] == "text/plain; charset=utf-8"
    assert error_of(400, body)["error"].startswith("bad request body: ")
    assert body.endswith(b"}\n")
    status, _, body = http(toxiproxy, "POST", "/proxies", raw=b"")
    assert error_of(status, body)["error"] == "bad request body: EOF"
    cases = [
        ({"upstream": "127.0.0.1:1"}, 400, "missing required field: name"),
        ({"name": "x"}, 400, "missing required field: upstream"),
        (
            {"name": "p", "upstream": "127.0.0.1:1", "listen": "127.0.0.1:0"},
            409,
            "proxy already exists",
        ),
    ]
    for body_in, want_status, message in cases:
        status, _, body = http(toxiproxy, "POST", "/proxies", body_in)
        assert status == want_status
        assert error_of(status, body)["error"] == message
    status, _, body = http(toxiproxy, "POST", "/proxies", {"name": 3, "upstream": "x:1"})
    assert status == 400 and "cannot unmarshal number" in error_of(400, body)["error"]
    for method, path in [
        ("GET", "/proxies/nope"),
        ("PATCH", "/proxies/nope"),
        ("DELETE", "/proxies/nope"),
        ("GET", "/proxies/nope/toxics"),
        ("POST", "/proxies/nope/toxics"),
        ("GET", "/proxies/nope/toxics/t"),
    ]:
        status, _, body = http(toxiproxy, method, path, {})
        assert (status, error_of(status, body)["error"]) == (404, "proxy not found")


def test_port_in_use_is_a_500(toxiproxy: ApiServer, echo_port: int) -> None:
    body = {"name": "busy", "listen": f"127.0.0.1:{echo_port}", "upstream": "127.0.0.1:1"}
    status, _, data = http(toxiproxy, "POST", "/proxies", body)
    assert status == 500
    assert "address already in use" in error_of(500, data)["error"]
    assert http(toxiproxy, "GET", "/proxies/busy")[0] == 404


def test_toxic_lifecycle(toxiproxy: ApiServer, echo_port: int) -> None:
    create(toxiproxy, echo_port)
    status, _, body = http(
        toxiproxy, "POST", "/proxies/p/toxics", {"type": "latency", "attributes": {"latency": 10}}
    )
    assert status == 200  # Toxiproxy answers 200, not 201, here
    toxic = json.loads(body)
    assert toxic == {
        "attributes": {"latency": 10, "jitter": 0},
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1,
    }
    assert json.loads(http(toxiproxy, "GET", "/proxies/p/toxics")[2]) == [toxic]
    assert json.loads(http(toxiproxy, "GET", "/proxies/p/toxics/latency_downstream")[2]) == toxic
    assert json.loads(http(toxiproxy, "GET", "/proxies/p")[2])["toxics"] == [toxic]
    status, _, body = http(
        toxiproxy,
        "PATCH",
        "/proxies/p/toxics/latency_downstream",
        {"attributes": {"jitter": 2}, "toxicity": 0.5},
    )
    assert status == 200
    assert json.loads(body)["attributes"] == {"latency": 10, "jitter": 2}
    assert json.loads(body)["toxicity"] == 0.5
    status, _, body = http(
        toxiproxy, "POST", "/proxies/p/toxics/latency_downstream", {"attributes": {"latency": 20}}
    )
    assert json.loads(body)["attributes"] == {"latency": 20, "jitter": 2}
    assert json.loads(body)["toxicity"] == 0.5
    assert http(toxiproxy, "DELETE", "/proxies/p/toxics/latency_downstream")[0] == 204
    assert json.loads(http(toxiproxy, "GET", "/proxies/p/toxics")[2]) == []


@pytest.mark.parametrize(
    ("toxic_type", "attributes"),
    [
        ("latency", {"latency": 1, "jitter": 0}),
        ("bandwidth", {"rate": 1}),
        ("slow_close", {"delay": 1}),
        ("timeout", {"timeout": 1}),
        ("reset_peer", {"timeout": 1}),
        ("slicer", {"average_size": 1, "size_variation": 0, "delay": 1}),
        ("limit_data", {"bytes": 1}),
        ("noop", {}),
    ],
)
def test_every_toxic_type_round_trips(
    toxiproxy: ApiServer, echo_port: int, toxic_type: str, attributes: dict[str, int]
) -> None:
    create(toxiproxy, echo_port)
    body = {"type": toxic_type, "stream": "upstream", "attributes": attributes, "toxicity": 0}
    status, _, data = http(toxiproxy, "POST", "/proxies/p/toxics", body)
    assert status == 200
    toxic = json.loads(data)
    assert toxic["name"] == f"{toxic_type}_upstream"
    assert toxic["attributes"] == attributes and toxic["toxicity"] == 0


def test_toxic_errors(toxiproxy: ApiServer, echo_port: int) -> None:
    create(toxiproxy, echo_port)
    cases: list[tuple[Any, int, str]] = [
        ({"type": "nope"}, 400, "invalid toxic type"),
        (
            {"type": "latency", "stream": "sideways"},
            400,
            "stream was invalid, can be either upstream or downstream",
        ),
        (
            {"type": "latency", "stream": ""},
            400,
            "stream was invalid, can be either upstream or downstream",
        ),
    ]
    for body_in, want_status, message in cases:
        status, _, body = http(toxiproxy, "POST", "/proxies/p/toxics", body_in)
        assert (status, error_of(status, body)["error"]) == (want_status, message)
    assert http(toxiproxy, "POST", "/proxies/p/toxics", {"type": "latency"})[0] == 200
    status, _, body = http(toxiproxy, "POST", "/proxies/p/toxics", {"type": "latency"})
    assert (status, error_of(status, body)["error"]) == (409, "toxic already exists")
    for bad in ({"latency": "slow"}, {"latency": 1.5}, [1]):
        status, _, body = http(
            toxiproxy,
            "POST",
            "/proxies/p/toxics",
            {"type": "latency", "name": "x", "attributes": bad},
        )
        assert status == 400 and error_of(400, body)["error"].startswith("bad request body: ")
    status, _, body = http(toxiproxy, "POST", "/proxies/p/toxics", raw=b"[")
    assert status == 400 and error_of(400, body)["error"].startswith("bad request body")
    for method in ("GET", "PATCH", "DELETE"):
        status, _, body = http(toxiproxy, method, "/proxies/p/toxics/nope", {})
        assert (status, error_of(status, body)["error"]) == (404, "toxic not found")
    # A rejected update leaves the toxic untouched.
    status, _, _ = http(
        toxiproxy,
        "PATCH",
        "/proxies/p/toxics/latency_downstream",
        {"attributes": {"latency": 5, "jitter": "x"}},
    )
    assert status == 400
    got = json.loads(http(toxiproxy, "GET", "/proxies/p/toxics/latency_downstream")[2])
    # Listed difference: Go decodes into the live toxic and keeps the fields before the bad one.
    assert got["attributes"]["latency"] == (5 if toxiproxy.real else 0)


def test_negative_values_are_accepted_like_toxiproxy(toxiproxy: ApiServer, echo_port: int) -> None:
    create(toxiproxy, echo_port)
    body = {"type": "latency", "toxicity": -1, "attributes": {"latency": -5}}
    status, _, data = http(toxiproxy, "POST", "/proxies/p/toxics", body)
    assert status == 200 and json.loads(data)["attributes"]["latency"] == -5


def test_populate(toxiproxy: ApiServer, echo_port: int) -> None:
    upstream = f"127.0.0.1:{echo_port}"
    status, _, body = http(
        toxiproxy,
        "POST",
        "/populate",
        [
            {"name": "a", "listen": "127.0.0.1:0", "upstream": upstream},
            {"name": "b", "listen": "127.0.0.1:0", "upstream": upstream, "enabled": False},
        ],
    )
    assert status == 201
    first = {p["name"]: p for p in json.loads(body)["proxies"]}
    assert set(json.loads(body)) == {"proxies"}
    assert first["a"]["enabled"] and not first["b"]["enabled"]
    http(toxiproxy, "POST", "/proxies/a/toxics", {"type": "latency"})
    # Unchanged proxies are kept (toxics included); changed ones are replaced.
    status, _, body = http(
        toxiproxy,
        "POST",
        "/populate",
        [
            {"name": "a", "listen": first["a"]["listen"], "upstream": upstream},
            {"name": "b", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1"},
            {"name": "c", "listen": "127.0.0.1:0", "upstream": upstream},
        ],
    )
    assert status == 201
    second = {p["name"]: p for p in json.loads(body)["proxies"]}
    assert second["a"]["listen"] == first["a"]["listen"]
    assert len(second["a"]["toxics"]) == 1
    assert second["b"]["upstream"] == "127.0.0.1:1" and second["b"]["enabled"]
    assert set(json.loads(http(toxiproxy, "GET", "/proxies")[2])) == {"a", "b", "c"}


def test_populate_errors(toxiproxy: ApiServer, echo_port: int) -> None:
    status, headers, body = http(toxiproxy, "POST", "/populate", [{"upstream": "x:1"}])
    assert status == 400 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "error": "missing required field: name at proxy 1",
        "status": 400,
        "proxies": None,
    }
    status, _, body = http(toxiproxy, "POST", "/populate", {"name": "x"})
    assert status == 400 and json.loads(body)["error"].startswith("bad request body")
    status, _, body = http(
        toxiproxy,
        "POST",
        "/populate",
        [
            {"name": "ok", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1"},
            {"name": "bad", "listen": f"127.0.0.1:{echo_port}", "upstream": "127.0.0.1:1"},
        ],
    )
    assert status == 500
    parsed = json.loads(body)
    assert [p["name"] for p in parsed["proxies"]] == ["ok"]
    assert "address already in use" in parsed["error"]


def test_reset_enables_proxies_and_removes_toxics(toxiproxy: ApiServer, echo_port: int) -> None:
    create(toxiproxy, echo_port)
    http(toxiproxy, "POST", "/proxies/p/toxics", {"type": "latency"})
    http(toxiproxy, "PATCH", "/proxies/p", {"enabled": False})
    status, _, body = http(toxiproxy, "POST", "/reset")
    assert (status, body) == (204, b"")
    proxy = json.loads(http(toxiproxy, "GET", "/proxies/p")[2])
    assert proxy["enabled"] is True and proxy["toxics"] == []


def test_router_edges(toxiproxy: ApiServer) -> None:
    status, _, body = http(toxiproxy, "GET", "/nope")
    assert (status, body) == (404, b"404 page not found\n")
    assert http(toxiproxy, "PUT", "/proxies")[0] == 405
    status, _, body = http(toxiproxy, "GET", "/proxies", user_agent="Mozilla/5.0")
    assert (status, body) == (403, b"User agent not allowed\n")
