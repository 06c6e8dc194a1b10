"""The way docs/observability.md shows, as a user runs it: `mesh up` with
OTEL_EXPORTER_OTLP_ENDPOINT pointing at the real Jaeger, `mesh call home`, then
`mesh traces --jaeger`: every process's spans arrive."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client import jaeger_query as jq
from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.console import address
from tests.integration.jaeger.jaeger_process import Jaeger
from tests.support.polling import wait_until

MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def mesh_env(jaeger: Jaeger, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`mesh up --auto-ports` exporting to Jaeger; the environment of a second terminal."""
    state_dir = tmp_path_factory.mktemp("mesh") / "var"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MESH_"))},
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{jaeger.otlp_grpc}",
        "MESH_JAEGER_UI": jaeger.query_url,
    }
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"mesh up exited early: {proc.communicate()[0].decode()}")
            return (state_dir / "mesh.json").exists()

        wait_until(up, 90, "mesh up writing its state file", 0.1)
        yield {**env, "MESH_STATE_DIR": str(state_dir)}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)


def test_a_call_through_mesh_up_lands_in_jaeger_from_every_hop(
    jaeger: Jaeger, mesh_env: dict[str, str]
) -> None:
    # In this process (a second interpreter costs seconds on a loaded machine); CliRunner sets
    # the environment of the second terminal for the call's length.
    call = CliRunner().invoke(
        app, ["call", "home", "--user", "u-0001", "--limit", "2", "--json", "-"], env=mesh_env
    )
    assert call.exit_code == 0, call.output
    trace_id = json.loads(call.stdout)["trace_id"]
    hops = {"gateway", "recommendation", "profile"}
    # What each process sends (a slow attempt retried would add spans, never change these).
    sent = {
        ("gateway", "Recv.mesh.v1.Gateway.GetHome"),
        ("gateway", "Attempt.mesh.v1.RecommendationService.Recommend"),
        ("recommendation", "Recv.mesh.v1.RecommendationService.Recommend"),
        ("recommendation", "Sent.mesh.v1.ProfileService.GetProfile"),
        ("recommendation", "Attempt.mesh.v1.ProfileService.GetProfile"),
        ("profile", "Recv.mesh.v1.ProfileService.GetProfile"),
    }

    def every_hop() -> list[tr.Span]:
        try:
            spans = jq.jaeger_trace(jaeger.query_url, trace_id)
        except jq.JaegerError:
            return []
        return spans if sent <= {(s["service"], s["name"]) for s in spans} else []

    # Each process exports every 500 ms (the launcher's batch delay), Jaeger stores within 200.
    spans = wait_until(every_hop, 30, f"trace {trace_id} from every hop in Jaeger", 0.2)
    assert {s["service"] for s in spans} == hops
    assert {(s["service"], s["name"]) for s in spans if s["service"] != "gateway"} == {
        pair for pair in sent if pair[0] != "gateway"
    }

    drawn = CliRunner().invoke(
        app, ["traces", "--jaeger", jaeger.query_url, trace_id], env={"COLUMNS": "160"}
    )
    assert drawn.exit_code == 0, drawn.output
    assert f"trace {trace_id}: Recv.mesh.v1.Gateway.GetHome" in drawn.output
    assert all(f"[{hop}] OK" in drawn.output for hop in hops), drawn.output
    # With an OTLP endpoint the services export there only: nothing in the local files.
    assert not list((Path(mesh_env["MESH_STATE_DIR"]) / "traces").glob("*.jsonl"))


def test_the_console_and_the_calls_hint_read_jaegers_copy(
    jaeger: Jaeger, mesh_env: dict[str, str]
) -> None:
    """While the spans go to Jaeger, `mesh call` points at Jaeger's copy and the console's
    traces tab lists it from Jaeger's API, saying so; not the state dir's empty files."""
    call = CliRunner().invoke(app, ["call", "home", "--user", "u-0002"], env=mesh_env)
    assert call.exit_code == 0, call.output
    hint = re.search(r"trace ([0-9a-f]{32}) \((.*)\)", " ".join(call.output.split()))
    assert hint is not None, call.output
    trace_id = hint.group(1)
    assert hint.group(2) == f"mesh traces --jaeger {jaeger.query_url} {trace_id}; Jaeger's copy"
    console = address.find(Path(mesh_env["MESH_STATE_DIR"]))
    assert console is not None

    def listed() -> dict[str, Any]:
        request = urllib.request.Request(f"{console.url}api/traces?limit=500")
        request.add_header("Authorization", f"Bearer {console.token}")
        with urllib.request.urlopen(request, timeout=10) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
        return answer if trace_id in {t["trace_id"] for t in answer["traces"]} else {}

    answer = wait_until(listed, 30, f"trace {trace_id} in the console's traces tab", 0.3)
    assert answer["source"] == "jaeger" and jaeger.query_url in answer["source_label"]
