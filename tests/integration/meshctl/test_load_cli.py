"""`mesh load` drives the console's own background load (one load per mesh, seen by both), with
--for ending it by itself; `mesh watch` says what its zeros mean when nothing calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.watch import idle_note
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.server import ConsoleServer
from grpc_resilience_mesh.launch.ports import free_port
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ConsoleServer]:
    """A console whose gateway address nothing listens on: every call ends UNAVAILABLE."""
    state = MeshState(
        gateway=f"127.0.0.1:{free_port()}",
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


def mesh(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_load_started_from_the_cli_is_the_consoles_and_ends_after_for(
    server: ConsoleServer, tmp_path: Path
) -> None:
    where = ["--state-dir", str(tmp_path)]
    assert mesh("load", "status", *where) == (0, "load: stopped\n")
    code, out = mesh("load", "start", "--rate", "20", "--for", "1", *where)
    assert code == 0 and "load: running, 20/s (home 3 : checkout 1) for 1 s" in out, out
    assert server.console.load.status()["rate_per_s"] == 20  # the page's load, not another

    def ended_with_calls() -> dict[str, Any]:
        load = server.console.load.status()
        return load if load["running"] is False and load["codes"] else {}

    ended = wait_until(ended_with_calls, 60, "the load's end after --for 1", 0.1)
    assert ended["codes"].get("UNAVAILABLE", 0) > 0, ended  # nothing listens at the gateway
    code, out = mesh("load", "status", *where)
    assert code == 0 and out.startswith("load: stopped, 20/s") and "UNAVAILABLE" in out, out


def test_load_stop_stops_what_runs_until_stopped(server: ConsoleServer, tmp_path: Path) -> None:
    where = ["--state-dir", str(tmp_path)]
    code, out = mesh("load", "start", "--rate", "5", *where)
    assert code == 0 and "until stopped" in out, out
    assert server.console.load.status()["running"] is True
    assert mesh("load", "stop", *where) == (0, "load: stopped\n")
    assert server.console.load.status() == {"running": False}


def test_without_a_console_it_says_so(tmp_path: Path) -> None:
    code, out = mesh("load", "start", "--state-dir", str(tmp_path))
    assert code == 2 and "no console runs for the mesh in" in out, out


def test_watch_says_its_zeros_mean_no_calls() -> None:
    idle = {"edges": [{"stats": {"calls_per_s": 0.0}}, {"stats": {"calls_per_s": 0.0}}]}
    busy = {"edges": [{"stats": {"calls_per_s": 0.0}}, {"stats": {"calls_per_s": 3.2}}]}
    note = idle_note(idle, 5.0)
    assert note is not None and "no calls in the last 5 s" in note and "load start" in note
    assert idle_note(busy, 5.0) is None
