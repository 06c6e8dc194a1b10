"""`mesh up`'s default ports sit below the kernel's ephemeral range, where no outgoing connection
takes them as its source port; one held anyway stops `mesh up` before anything starts, naming the
port and `--auto-ports` (issue 46: `make up` failed three times on 50062/50052 that way)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from grpc_resilience_mesh.cli import up as up_cmd
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.launch import ports
from grpc_resilience_mesh.launch.ports import Ports, free_ports

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def every_default_port() -> list[int]:
    d = Ports.default()
    return [
        *d.listen.values(),
        *d.admin.values(),
        *d.metrics.values(),
        *d.proxies.values(),
        d.toxiproxy_api,
    ]


@pytest.mark.skipif(not RANGE_FILE.exists(), reason="no Linux ephemeral range to compare with")
def test_no_default_port_is_in_the_ephemeral_range() -> None:
    low, high = (int(v) for v in RANGE_FILE.read_text().split())
    inside = sorted(p for p in every_default_port() if low <= p <= high)
    assert inside == [], f"default ports inside {low}-{high}: {inside}"


@pytest.fixture
def source_port_held() -> Iterator[int]:
    """The default gateway port held as an outgoing connection's source port, as a neighbour's
    connection held 50052 in the issue (a listener would do too)."""
    port = Ports.default().listen["gateway"]
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        try:
            client.bind(("127.0.0.1", port))
        except OSError:
            pytest.skip(f"127.0.0.1:{port} is already taken by something else here")
        client.connect(server.getsockname())
        accepted, _ = server.accept()
        with accepted:
            yield port


class NotStarted(Exception):
    """Raised where `mesh up` would start its mesh: the refusal should come before."""


class FakeMesh:
    """Locks its state dir (nothing to lock here); starting it is the failure."""

    made: list[FakeMesh] = []

    def __init__(self, **kwargs: object) -> None:
        self.started = False
        FakeMesh.made.append(self)

    def lock(self) -> None:
        """The state dir is ours."""

    def start(self) -> None:
        self.started = True
        raise NotStarted

    def stop(self) -> dict[str, int]:
        return {}


def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    FakeMesh.made = []
    monkeypatch.setattr(up_cmd, "Mesh", FakeMesh)
    monkeypatch.setattr(up_cmd, "ControlServer", None)  # never reached: it would open a socket
    monkeypatch.setattr(up_cmd, "raise_open_files_limit", lambda: None)
    monkeypatch.setattr(up_cmd, "private_umask", lambda: None)
    result = CliRunner().invoke(app, ["up", "--state-dir", str(tmp_path / "var"), *args])
    return result.exit_code, " ".join(result.output.split())


def test_a_held_default_port_is_named_with_auto_ports_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source_port_held: int
) -> None:
    code, output = up(tmp_path, monkeypatch)
    assert code == 2, output
    assert f"127.0.0.1:{source_port_held} (gateway)" in output
    assert "mesh up --auto-ports" in output
    assert not any(m.started for m in FakeMesh.made)


def test_with_direct_toxiproxys_ports_are_not_checked() -> None:
    api = Ports.default().toxiproxy_api
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past a TIME_WAIT, as gRPC
        try:
            held.bind(("127.0.0.1", api))
        except OSError:
            pytest.skip(f"127.0.0.1:{api} is already taken by something else here")
        held.listen()
        assert Ports.default().held().get(api) == "Toxiproxy API"
        assert api not in Ports.default().held(toxiproxy=False)


def test_free_ports_never_hand_out_a_default_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's or a chaos run's pick would otherwise hold a port a later `mesh up` needs."""
    gateway = Ports.default().listen["gateway"]
    monkeypatch.setattr(ports, "_LOWEST", gateway - 5)
    monkeypatch.setattr(ports, "_ephemeral_range", lambda: (gateway - 5 + 1100, 65535))
    monkeypatch.setattr(ports, "_start", lambda n: 0)  # the first candidates: the gateway's
    picked = free_ports(20)
    assert not set(picked) & set(every_default_port()), picked


def test_past_five_held_ports_the_rest_are_counted(capsys: pytest.CaptureFixture[str]) -> None:
    """A second mesh on the default ports finds every one held: five named, then a count."""

    class AllHeld:
        def held(self, toxiproxy: bool = True) -> dict[int, str]:
            return {20051 + i: f"s{i}" for i in range(7)}

    with pytest.raises(typer.Exit):
        up_cmd._refuse_held(AllHeld(), direct=False)  # type: ignore[arg-type]
    said = " ".join(capsys.readouterr().out.split())
    assert "127.0.0.1:20055 (s4) and 2 more (another mesh on the default ports?)" in said
    assert "20056" not in said
