"""Every edge of `mesh up` goes through its own proxy: toxiproxy-python breaks it, `mesh call`
shows it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.topology import EDGES, PROXIES, SERVICES, edge_proxies
from tests.support.toxiproxy_token import send_token_from_toxiproxy_python

pytestmark = pytest.mark.e2e
ON_THE_HOME_PATH = {"gateway_to_profile", "gateway_to_recommendation", "recommendation_to_profile"}


@pytest.fixture
def toxiproxy(mesh: Mesh, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toxiproxy]:
    assert mesh.state is not None and mesh.state.toxiproxy
    send_token_from_toxiproxy_python(monkeypatch, mesh.state.admin_token)
    saved = (APIConsumer.host, APIConsumer.port)
    server = Toxiproxy()
    host, port = mesh.state.toxiproxy.removeprefix("http://").rsplit(":", 1)
    server.update_api_consumer(host, int(port))
    try:
        yield server
    finally:
        server.reset()
        APIConsumer.host, APIConsumer.port = saved


def call_home(mesh: Mesh) -> tuple[float, list[dict[str, str]]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_resilience_mesh.cli",
            "call",
            "home",
            "--user",
            "u-0003",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MESH_STATE_DIR": str(mesh.state_dir)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    elapsed = re.search(r"answered in (\d+) ms", proc.stderr)
    assert elapsed, proc.stderr
    return float(elapsed.group(1)), json.loads(proc.stdout).get("degraded", [])


def test_every_edge_has_its_own_proxy(toxiproxy: Toxiproxy) -> None:
    """One per edge and replica of its dependency: `gateway_to_profile` and `...-2`."""
    assert set(toxiproxy.proxies()) == {p.name for p in PROXIES}


GRPC_EDGES = [e.name for e in EDGES if e.dependency in {s.name for s in SERVICES}]


@pytest.mark.parametrize("edge", GRPC_EDGES)
def test_a_latency_toxic_on_any_edge_shows_in_mesh_call(
    mesh: Mesh, toxiproxy: Toxiproxy, edge: str
) -> None:
    _, degraded = call_home(mesh)
    assert degraded == []
    # The edge as a whole: every replica's proxy (a call may go to either replica).
    proxies = [
        toxiproxy.get_proxy(p.name) for p in edge_proxies(next(e for e in EDGES if e.name == edge))
    ]
    for proxy in proxies:
        proxy.add_toxic(type="latency", attributes={"latency": 250})
    after, degraded = call_home(mesh)
    for proxy in proxies:
        proxy.destroy_toxic("latency_downstream")
    if edge not in ON_THE_HOME_PATH:
        # GetHome does not cross this edge: the toxic must leave it untouched.
        assert after < 250 and degraded == []
    elif edge == "recommendation_to_profile":
        # 250 ms exceeds that hop's 100 ms attempt budget: recommendations degrade.
        assert [d["served_by"] for d in degraded] == ["popular"]
    else:
        assert after >= 250, f"{edge}: {after} ms"
    restored, degraded = call_home(mesh)
    assert degraded == [] and restored < 250
