"""`mesh toxiproxy --server real` (MESH_TOXIPROXY=real) becomes real Toxiproxy 2.12 in place."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.launch.ports import free_port
from tests.support.peers import peer_binary
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(30)
MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]


def test_the_real_server_replaces_the_command_in_the_same_process(tmp_path: Path) -> None:
    binary = peer_binary("toxiproxy-server")
    port = free_port("127.0.0.1")
    config = tmp_path / "proxies.json"
    config.write_text('[{"name": "edge", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1"}]')
    env = {**os.environ, "MESH_TOXIPROXY": "real"}
    args = [*MESH, "toxiproxy", "--port", str(port), "--config", str(config)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=1.0)

        def answers() -> bool:
            try:
                return bool(client.proxies())
            except ToxiproxyError:
                return False

        wait_until(answers, timeout_s=15, what="real toxiproxy answering")
        # The launcher's pid is the Go binary's: stopping it stops the real server.
        assert Path(f"/proc/{proc.pid}/exe").resolve() == binary.resolve()
        assert client.version() == "2.12.0"
        assert list(client.proxies()) == ["edge"]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("command", [["up", "--auto-ports"], ["chaos", "run", "provider-outage"]])
def test_a_missing_real_binary_is_a_one_line_error(tmp_path: Path, command: list[str]) -> None:
    env = {**os.environ, "MESH_TOXIPROXY_BIN": str(tmp_path / "absent")}
    args = [*MESH, *command, "--toxiproxy", "real", "--state-dir", str(tmp_path / "var")]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "make peers" in done.stdout + done.stderr
    assert not (tmp_path / "var" / "mesh.json").exists()
