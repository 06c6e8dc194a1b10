"""`mesh up`'s control plane on a shared host: another local process, which never read the state
dir, cannot spend the API key through the console, re-point a Toxiproxy edge or set an app
fault; the tokens live in owner-only files, and with them everything works."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc
from tests.e2e.mesh_up_process import MESH
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@dataclass
class UpWithConsole:
    state_dir: Path
    state: dict[str, Any]
    console: str
    """The URL the banner printed, with its ?token=."""


@pytest.fixture
def up(tmp_path: Path) -> Iterator[UpWithConsole]:
    state_dir = tmp_path / "var"
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:

        def url() -> str:
            if proc.poll() is not None:
                raise AssertionError("mesh up exited early:\n" + "".join(output))
            found = re.search(r"console: (http://127\.0\.0\.1:\d+/\?token=[\w-]+)", "".join(output))
            return found.group(1) if found else ""

        console = wait_until(url, 90, "the console's URL in the banner", 0.1)
        state = json.loads((state_dir / "mesh.json").read_text())
        yield UpWithConsole(state_dir, state, console)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        reader.join(timeout=5)


def post(url: str, body: object, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    for name, value in {"User-Agent": "another-user", **headers}.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def charges(state_dir: Path) -> int:
    db = sqlite3.connect(f"file:{state_dir / 'payment' / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM charges").fetchone()[0])
    finally:
        db.close()


def test_the_secrets_are_owner_only_and_the_console_needs_its_token(up: UpWithConsole) -> None:
    token = up.console.rpartition("?token=")[2]
    token_file = up.state_dir / "console-token"
    assert token_file.read_text().strip() == token
    for path in (token_file, up.state_dir / "mesh.json"):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert up.state["admin_token"] and up.state["admin_token"] != token

    base = up.console.partition("?")[0]
    load = {"rate_per_s": 20, "home": 0, "checkout": 1}
    before = charges(up.state_dir)
    status, body = post(base + "api/load", load, {"X-Mesh-Console": "1"})
    assert status == 401 and "token" in body["error"]
    time.sleep(1.0)  # what a started load would have charged by now
    assert charges(up.state_dir) == before

    mine = {"X-Mesh-Console": "1", "Authorization": f"Bearer {token}"}
    status, body = post(base + "api/load", load, mine)
    assert status == 200 and body["running"] is True
    try:
        wait_until(lambda: charges(up.state_dir) > before, 20, "a checkout charged")
    finally:
        assert post(base + "api/load/stop", {}, mine)[0] == 200


def test_without_the_admin_token_no_edge_is_repointed_and_no_fault_is_set(
    up: UpWithConsole,
) -> None:
    toxiproxy, token = up.state["toxiproxy"], up.state["admin_token"]
    edge = f"{toxiproxy}/proxies/gateway_to_payment"
    status, body = post(edge, {"upstream": "127.0.0.1:9"}, {})
    assert status == 401 and "Authorization: Bearer" in body["error"]
    owner = ToxiproxyClient(toxiproxy, timeout_s=5, token=token)
    assert (
        owner.get_proxy("gateway_to_payment")["upstream"]
        == up.state["proxies"]["gateway_to_payment"]["upstream"]
    )

    with grpc.insecure_channel(up.state["services"]["recommendation"]["admin"]) as channel:
        stub = admin_pb2_grpc.FaultAdminStub(channel)
        fault = admin_pb2.Fault(method="*", error_rate=1.0, code="UNAVAILABLE")
        with pytest.raises(grpc.RpcError) as caught:
            stub.SetFault(admin_pb2.SetFaultRequest(fault=fault), timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        listed = stub.ListFaults(
            admin_pb2.ListFaultsRequest(), timeout=5, metadata=admin_metadata(token)
        )
        assert list(listed.faults) == []
