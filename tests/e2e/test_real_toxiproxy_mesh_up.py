"""`mesh up --toxiproxy real`: every edge through real Toxiproxy 2.12, which toxiproxy-cli reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.mesh_up_process import MESH, pid_alive
from tests.support.peers import peer_binary
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_mesh_up_runs_real_toxiproxy_that_toxiproxy_cli_reads(tmp_path: Path) -> None:
    server, cli = peer_binary("toxiproxy-server"), peer_binary("toxiproxy-cli")
    state_dir = tmp_path / "var"
    args = [*MESH, "up", "--auto-ports", "--toxiproxy", "real", "--state-dir", str(state_dir)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        path = state_dir / "mesh.json"

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"mesh up exited: {proc.communicate()[0].decode()}")
            return path.exists()

        wait_until(up, 90, "mesh up writing its state file", 0.1)
        state = json.loads(path.read_text())
        pid = state["pids"]["toxiproxy"]
        assert Path(f"/proc/{pid}/exe").resolve() == server.resolve()
        env = {**os.environ, "TOXIPROXY_URL": state["toxiproxy"]}
        listed = subprocess.run([str(cli), "list"], env=env, capture_output=True, text=True)
        assert listed.returncode == 0, listed.stderr
        for name in state["proxies"]:
            assert name in listed.stdout
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
    # Stopping the mesh stops the real server with it.
    wait_until(lambda: not pid_alive(pid), 10, "real toxiproxy stopped with the mesh", 0.1)
