"""`mesh fault add|list|reset --xds` against a running `mesh up --xds`, as typed: an A33 abort
and delay pushed through the control plane's admin HTTP change the gateway's calls within a
second of the command's return, at the share asked for, and a reset takes them away again."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.services.v1 import gateway_pb2
from tests.e2e.mesh_up_process import MeshUp, running_mesh_up
from tests.e2e.test_mesh_xds import home
from tests.support.peers import peer_binary

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

EDGE = "gateway_to_recommendation"


@pytest.fixture
def mesh_up_xds(tmp_path: Path) -> Iterator[MeshUp]:
    peer_binary("mesh-xds")  # skips, naming `make peers`, when the control plane is not built
    with running_mesh_up(tmp_path / "var", "--xds", "--policy", "unprotected") as running:
        yield running


def took_s(probe: Callable[[], bool], limit_s: float = 5.0) -> float:
    """Seconds until `probe()` holds (calls made back to back), or `limit_s` + 1 if never."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if probe():
            return time.monotonic() - started
    return limit_s + 1


def cli(mesh_up: MeshUp, *args: str) -> str:
    done = mesh_up.mesh("fault", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_xds_faults_pushed_listed_and_reset_change_calls_within_a_second(
    mesh_up_xds: MeshUp,
) -> None:
    mesh_up, key = mesh_up_xds, mesh_up_xds.state.get("api_key")
    with grpc.insecure_channel(mesh_up.state["gateway"]) as channel:

        def degraded() -> bool:
            return bool(home(channel, key).degraded)

        def timed_home() -> tuple[float, gateway_pb2.GetHomeResponse]:
            started = time.monotonic()
            reply = home(channel, key)
            return time.monotonic() - started, reply

        assert not degraded()
        cli(mesh_up, "add", "--xds", EDGE, "--method", "Recommend", "--abort-code", "UNAVAILABLE")
        abort_took_s = took_s(degraded)
        out = cli(mesh_up, "add", "--xds", EDGE, "--method", "Recommend", "--abort-code",
                  "UNAVAILABLE", "--percent", "30")  # fmt: skip
        assert "abort 30% UNAVAILABLE on gateway_to_recommendation (Recommend calls)" in out
        replies = [home(channel, key) for _ in range(400)]
        share = sum(1 for r in replies if r.degraded) / len(replies)
        codes = {d.code for r in replies for d in r.degraded}
        cli(mesh_up, "add", "--xds", "gateway_to_profile", "--delay-ms", "200")
        delay_took_s = took_s(lambda: timed_home()[0] >= 0.2)
        listed = json.loads(cli(mesh_up, "list", "--json"))["xds_faults"]
        cli(mesh_up, "reset")

        def clean() -> bool:
            seconds, reply = timed_home()
            return seconds < 0.2 and not reply.degraded

        reset_took_s = took_s(clean)
        after = json.loads(cli(mesh_up, "list", "--json"))["xds_faults"]
    print(  # the figures docs/patterns/xds.md quotes (pytest -s shows them)
        f"abort {abort_took_s * 1000:.0f} ms, 30% share {share:.3f}, delay "
        f"{delay_took_s * 1000:.0f} ms, reset {reset_took_s * 1000:.0f} ms"
    )
    assert abort_took_s < 1.0, f"the abort took {abort_took_s:.3f} s to reach the calls"
    # 400 draws at 30%: one sigma is sqrt(0.3 * 0.7 / 400) = 2.3 points; 4 sigma either side.
    assert 0.208 <= share <= 0.392, share
    assert codes == {"UNAVAILABLE"}
    assert delay_took_s < 1.0, f"the delay took {delay_took_s:.3f} s to reach the calls"
    shown = [(f["edge"], f["method"], f["abort_percent"], f["delay_s"], f["owner"]) for f in listed]
    assert shown == [
        ("gateway_to_profile", "*", 0.0, 0.2, "mesh fault"),
        (EDGE, "Recommend", 30.0, 0.0, "mesh fault"),
    ]
    assert reset_took_s < 1.0, f"the reset took {reset_took_s:.3f} s to reach the calls"
    assert after == []
