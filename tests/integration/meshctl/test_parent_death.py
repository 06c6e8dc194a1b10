"""A child started with launch.parent_death.dies_with_parent ends when its parent is killed with
SIGKILL, though it runs in a session of its own where no signal to the parent's group reaches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.polling import wait_until

PARENT = """
import subprocess, sys, time
from grpc_resilience_mesh.launch.parent_death import dies_with_parent

child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"],
    start_new_session=True,
    preexec_fn=dies_with_parent(),
)
print(child.pid, flush=True)
time.sleep(60)  # killed long before
"""


def alive(pid: int) -> bool:
    """Running, as /proc says: a zombie its new parent has yet to reap counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_ends_within_5_s_of_its_parent_s_sigkill() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    try:
        assert alive(pid)
        os.kill(parent.pid, signal.SIGKILL)
        killed = time.monotonic()
        parent.wait(10)
        wait_until(lambda: not alive(pid), timeout_s=5.0, what=f"child {pid} gone")
        print(f"\nchild gone {time.monotonic() - killed:.3f} s after its parent's SIGKILL")
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
