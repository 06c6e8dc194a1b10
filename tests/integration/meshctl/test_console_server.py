"""The console's HTTP server on 127.0.0.1: pages and API for loopback names only, the API only
with the console's per-run token, changes only with the console's header, bad input answered
400 with a reason, nothing left running."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.server import ConsoleServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ConsoleServer]:
    state = MeshState(
        gateway="127.0.0.1:1",
        toxiproxy=None,
        services={},
        proxies={},
        pids={},
        policy="full",
        state_dir=str(tmp_path),
    )
    running = ConsoleServer(state, 0, reports_dir=tmp_path / "reports").start()
    try:
        yield running
    finally:
        running.close()


def ask(
    server: ConsoleServer,
    method: str,
    path: str,
    body: str | None = None,
    headers: dict[str, str] | None = None,
    token: bool = True,
) -> tuple[int, str]:
    """One request, carrying the console's token unless `token` is false."""
    sent = {"Authorization": f"Bearer {server.token.value}"} if token else {}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={**sent, **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_it_serves_the_page_and_state_on_loopback_only(server: ConsoleServer) -> None:
    status, page = ask(server, "GET", "/")
    assert status == 200 and '<svg id="graph"' in page
    status, body = ask(server, "GET", "/api/state")
    assert status == 200 and json.loads(body)["policy"] == "full"
    status, _ = ask(server, "GET", "/api/state", headers={"Host": "evil.example:80"})
    assert status == 403  # a rebinding name never reaches the API


def test_changes_need_the_console_header_and_valid_input(server: ConsoleServer) -> None:
    fault = json.dumps({"service": "recommendation", "method": "Recommend"})
    assert ask(server, "POST", "/api/faults", fault)[0] == 403
    mine = {"X-Mesh-Console": "1"}
    status, body = ask(server, "POST", "/api/faults", fault, mine)
    assert status == 400 and "unknown service 'recommendation'" in body
    status, body = ask(server, "POST", "/api/toxics", "{not json", mine)
    assert status == 400 and "not JSON" in body
    status, body = ask(
        server, "POST", "/api/toxics", json.dumps({"edge": "x", "type": "latency"}), mine
    )
    assert status == 400 and "without Toxiproxy" in body
    status, body = ask(server, "POST", "/api/load", json.dumps({"rate_per_s": 1e9}), mine)
    assert status == 400 and "rate" in body
    assert ask(server, "GET", "/api/traces/not-hex")[0] == 400
    assert ask(server, "GET", "/api/traces?filter=bogus")[0] == 400
    assert ask(server, "GET", "/api/reports/../../etc")[0] in (400, 404)
    assert ask(server, "GET", "/api/nothing")[0] == 404


def test_the_api_needs_the_token_and_the_page_does_not(server: ConsoleServer) -> None:
    assert ask(server, "GET", "/", token=False)[0] == 200
    assert ask(server, "GET", "/static/console.js", token=False)[0] == 200
    mine = {"X-Mesh-Console": "1"}
    for method, path, body in [
        ("GET", "/api/state", None),
        ("GET", "/api/traces", None),
        ("GET", "/api/reports", None),
        ("POST", "/api/load", json.dumps({"rate_per_s": 5, "checkout": 1})),
        ("POST", "/api/reset", "{}"),
    ]:
        for headers in (mine, {**mine, "Authorization": "Bearer not-the-token"}):
            status, text = ask(server, method, path, body, headers, token=False)
            assert status == 401, (method, path)
            assert "?token=" in json.loads(text)["error"]
    assert server.console.load.status()["running"] is False
    assert ask(server, "GET", "/api/state")[0] == 200


def test_the_token_is_in_the_url_and_in_an_owner_only_file_removed_on_close(
    tmp_path: Path,
) -> None:
    state = MeshState("127.0.0.1:1", None, {}, {}, {}, "full", str(tmp_path))
    running = ConsoleServer(state, 0, reports_dir=tmp_path / "reports").start()
    path = tmp_path / "console-token"
    try:
        assert running.token_url == f"{running.url}?token={running.token.value}"
        assert path.read_text().strip() == running.token.value
        assert len(running.token.value) >= 32
        assert path.stat().st_mode & 0o777 == 0o600
        other = ConsoleServer(state, 0, reports_dir=tmp_path / "reports").start()
        other.close()
        assert other.token.value != running.token.value  # per run
    finally:
        running.close()
    assert not path.exists()


def test_the_state_carries_each_services_admission(server: ConsoleServer) -> None:
    status, body = ask(server, "GET", "/api/state")
    servers = {s["name"]: s for s in json.loads(body)["servers"]}
    assert status == 200 and set(servers) >= {"gateway", "profile", "recommendation", "payment"}
    assert servers["recommendation"]["concurrency_limit"] is None, "no metrics read: unknown"
    assert servers["recommendation"]["shed_by_reason"] == {}
