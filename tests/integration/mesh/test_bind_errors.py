"""An address that parses but cannot be bound is a configuration error like any other: one
line on stderr naming the variable, exit 2, never a traceback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from grpc_resilience_mesh.services.profile.servicer import build
from grpc_resilience_mesh.services.runtime.server import run


@pytest.fixture
def taken_port() -> Iterator[str]:
    """127.0.0.1:<port> held by a listening socket for the whole test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def port_of_a_grpc_server() -> Iterator[str]:
    """127.0.0.1:<port> where another gRPC server listens, with grpc's defaults (SO_REUSEPORT
    on): a second server with those defaults binds it too, without an error."""
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


def run_profile(monkeypatch: pytest.MonkeyPatch, **addrs: str) -> int:
    """run("profile") with these addresses; its exit code."""
    env = {
        "LISTEN_ADDR": "127.0.0.1:0",
        "ADMIN_ADDR": "127.0.0.1:0",
        "METRICS_ADDR": "127.0.0.1:0",
        "MESH_TRACING": "0",
        **addrs,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        run("profile", build)
    return int(exited.value.code or 0)


@pytest.mark.parametrize("var", ["LISTEN_ADDR", "ADMIN_ADDR", "METRICS_ADDR"])
def test_an_address_in_use_is_named_and_exits_2(
    var: str, taken_port: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_profile(monkeypatch, **{var: taken_port})
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if "configuration error" in ln]
    assert line.startswith(f"profile: configuration error: {var}={taken_port!r} cannot be bound")


@pytest.mark.parametrize("var", ["LISTEN_ADDR", "ADMIN_ADDR"])
def test_a_port_another_grpc_server_holds_is_refused_not_shared(
    var: str,
    port_of_a_grpc_server: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_profile(monkeypatch, **{var: port_of_a_grpc_server})
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = [ln for ln in err.splitlines() if "configuration error" in ln]
    assert line.startswith(f"profile: configuration error: {var}={port_of_a_grpc_server!r}")


def test_an_address_not_of_this_host_is_named_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_profile(monkeypatch, LISTEN_ADDR="8.8.8.8:1")
    err = capsys.readouterr().err
    assert code == 2
    [line] = [ln for ln in err.splitlines() if "configuration error" in ln]
    assert line.startswith("profile: configuration error: LISTEN_ADDR='8.8.8.8:1' cannot be bound")
