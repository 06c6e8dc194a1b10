"""`mesh up` under a flood of idle connections to its console, at a 512-descriptor hard limit:
its threads and descriptors stay bounded, and a replica killed meanwhile is restarted.

(Issue 25: with a thread per connection, 1,000 idle connections took mesh up to 1,010 threads,
and at this limit the supervisor could not open the killed replica's log until they let go.)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_resilience_mesh.console.bounded_http import HttpLimits
from tests.e2e.mesh_up_process import MESH, pid_alive, serving
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e
HARD_LIMIT = 512
CONNECTIONS = 1000


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, HARD_LIMIT))


def threads_and_fds(pid: int, port: int = 0) -> tuple[int, int, int]:
    """Its threads; its open files but the port picker's locks (mesh up holds a lock file per
    port it picked, grpc_resilience_mesh.launch.ports, and may pick more while the flood runs);
    and of those, the console's sockets when `port` is its port: the TCP ones on it, and the
    sockets in no table of the kernel's (a connection reset by its peer whose socket is not yet
    closed: the supervisor's probes close theirs at once, the console's wait for its loop)."""
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    locks = str(Path(tempfile.gettempdir()) / f"grpc-resilience-ports-{os.getuid()}") + "/"
    fds = 0
    sockets: set[str] = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            fds += not target.startswith(locks)
            if target.startswith("socket:["):
                sockets.add(target[8:-1])
    if not port:
        return threads, fds, 0
    local, listed, on_port = f":{port:04X}", set(), 0
    for table in ("tcp", "tcp6", "udp", "udp6", "unix"):
        inode_at = 6 if table == "unix" else 9
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                listed.add(fields[inode_at])
                ours = fields[inode_at] in sockets and table.startswith("tcp")
                on_port += ours and fields[1].endswith(local)
    return threads, fds, on_port + len(sockets - listed)


def soft_open_files(pid: int) -> int:
    line = next(
        x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if "open files" in x
    )
    return int(line.split()[3])


class Flood:
    """Keeps about CONNECTIONS idle connections open to `port`, replacing a fifth each second
    (an attacker reconnecting as the server closes them); bounded by `stop`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.held: list[socket.socket] = []
        self.rounds = 0
        """How many times a fifth has been replaced."""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, count: int) -> None:
        """Starts `count` connections without waiting for them (the kernel completes each
        handshake as the server's backlog allows), as a flood from many clients would."""
        for _ in range(count):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", self.port))
            self.held.append(sock)

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            for sock in self.held[: CONNECTIONS // 5]:
                sock.close()
            del self.held[: CONNECTIONS // 5]
            self._open(CONNECTIONS - len(self.held))
            self.rounds += 1

    def __enter__(self) -> Flood:
        self._open(CONNECTIONS)
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        for sock in self.held:
            sock.close()


@pytest.fixture
def mesh_up(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, int]]:
    state_dir = tmp_path / "var"
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_low_limit,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:

        def console_port() -> int:
            if proc.poll() is not None:
                raise AssertionError("mesh up exited early:\n" + "".join(lines))
            found = re.search(r"console: http://127\.0\.0\.1:(\d+)/", "".join(lines))
            return int(found.group(1)) if found else 0

        port = wait_until(console_port, 90, "mesh up printing its console's URL", 0.1)
        yield proc, state_dir, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        reader.join(timeout=5)


class Peak:
    """Samples mesh up every 10 ms from a thread of its own, keeping the highest count of its
    threads, of the console's sockets, and of all its open files: the bounds below are on
    every instant, not on one."""

    def __init__(self, pid: int, port: int) -> None:
        self.pid = pid
        self.port = port
        self.threads = 0
        self.console = 0
        self.fds = 0
        self.samples = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.01):
            with contextlib.suppress(OSError, AttributeError):
                threads, fds, console = threads_and_fds(self.pid, self.port)
                self.threads = max(self.threads, threads)
                self.console = max(self.console, console)
                self.fds = max(self.fds, fds)
                self.samples += 1

    def __enter__(self) -> Peak:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def test_idle_connections_to_the_console_do_not_stop_restarts(
    mesh_up: tuple[subprocess.Popen[str], Path, int],
) -> None:
    proc, state_dir, port = mesh_up
    assert soft_open_files(proc.pid) == HARD_LIMIT  # raised from 256 at start
    state = json.loads((state_dir / "mesh.json").read_text())
    victim = "profile-2" if "profile-2" in state["pids"] else "payment"
    old_pid = int(state["pids"][victim])
    addr = state["services"][victim]["listen"]
    threads_before = threads_and_fds(proc.pid)[0]
    limits = HttpLimits()
    with Flood(port) as flood:
        with Peak(proc.pid, port) as alone:
            # the console at its cap, and the flood's connections replaced twice over
            wait_until(
                lambda: alone.console > limits.max_connections and flood.rounds >= 2,
                30,
                "the console at its connection cap under two rounds of the flood",
                0.05,
            )
        with Peak(proc.pid, port) as restarting:
            os.kill(old_pid, signal.SIGKILL)

            def restarted() -> int:
                saved = json.loads((state_dir / "mesh.json").read_text())
                pid = int(saved["pids"][victim])
                return pid if pid != old_pid and pid_alive(pid) and serving(addr) else 0

            wait_until(restarted, 40, f"{victim} restarted while the console is flooded", 0.2)
        assert proc.poll() is None, "mesh up died under the flood"

    def drained() -> int:
        """mesh up's open files once the console has closed the flood's last connection
        (its count back to its listener), the restart done."""
        _, fds, console = threads_and_fds(proc.pid, port)
        return fds if console == 1 else 0

    others = wait_until(drained, 30, "the console rid of the flood's connections", 0.05) - 1
    print(
        f"mesh up: {threads_before} threads before the flood; in {alone.samples} samples of the"
        f" flood, at most {alone.threads} threads and {alone.console} console sockets; in"
        f" {restarting.samples} samples of the restart under it, at most {restarting.threads}"
        f" threads and {restarting.fds} files; {others} files and the console's listener after"
    )
    assert alone.threads <= threads_before + 8, (threads_before, alone.threads)
    # At the cap, one turn of the console's loop accepts up to accept_backlog connections and
    # hands each to its protocol on the next turn; there each closes the longest-silent one
    # with transport.abort(), whose socket asyncio closes a turn later, while that turn may
    # accept accept_backlog more. So at any instant: the listener, the cap, a turn's accepts not
    # yet handed over, and a turn's aborted ones not yet closed. (CI once counted 89 files over
    # mesh up's 10 at one instant, against a bound of the cap and one turn's accepts, 80 + 8.)
    # The 2: a socket not yet connected is in no table of the kernel's either, and the
    # supervisor may hold two such at once (its port picker's and its readiness probe's).
    flood_bound = 1 + limits.max_connections + 2 * limits.accept_backlog
    assert alone.console <= flood_bound + 2, (alone.console, flood_bound + 2)
    # Restarting a replica holds 5 files more for a while here (its log, the probe channel's
    # poller and wakeups), and its sockets to the killed one, reset, until gRPC closes them.
    assert restarting.fds <= flood_bound + others + 8, (restarting.fds, flood_bound, others)
