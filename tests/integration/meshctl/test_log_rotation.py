"""A process's log rotates while the process keeps writing: bounded, whole lines, no hole."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.log_rotation import LogLimits, LogRotator
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.spawn import LogSpawner
from tests.support.polling import wait_until

CHATTY = """
import sys, time
for n in range(20000):  # bounded: at most about 20 s
    sys.stdout.write(f"line {n:06d} " + "x" * 90 + "\\n")
    sys.stdout.flush()
    time.sleep(0.001)
"""
MAX_BYTES = 64 * 1024


def test_a_writing_process_log_rotates_into_bounded_whole_files(tmp_path: Path) -> None:
    proc = LogSpawner(tmp_path).spawn("chatty", ["-c", CHATTY], {}, supervised=False)
    log = tmp_path / "logs" / "chatty.log"
    rotator = LogRotator(log.parent, LogLimits(max_bytes=MAX_BYTES, backups=2))
    try:
        for _ in range(4):
            wait_until(lambda: log.stat().st_size > MAX_BYTES, 30, "the log to fill", 0.02)
            assert rotator.check() == [log]
        written = log.stat().st_size
        wait_until(lambda: log.stat().st_size > written + 2000, 30, "more lines", 0.02)
    finally:
        proc.popen.kill()
        proc.popen.wait()
    names = sorted(p.name for p in log.parent.iterdir())
    assert names == ["chatty.log", "chatty.log.1", "chatty.log.2"], "two copies kept"
    data = log.read_bytes()
    # The child's descriptor appends: after the truncation its lines start at 0, no hole of
    # zeros where the old content was, and the file is far below what it wrote in all.
    assert b"\0" not in data and len(data) < MAX_BYTES
    assert data.startswith(b"line ")
    numbers = []
    for path in (log.with_name("chatty.log.2"), log.with_name("chatty.log.1"), log):
        lines = path.read_bytes().splitlines()
        assert all(line.startswith(b"line ") and len(line) == 102 for line in lines[:-1]), path
        numbers += [int(line.split()[1]) for line in lines[:-1]]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert numbers == sorted(numbers), "oldest copy first, then the current log"


def test_bad_limits_refuse_to_start_naming_the_variable(tmp_path: Path) -> None:
    from grpc_resilience_mesh.launch.mesh import Mesh

    mesh = Mesh(state_dir=tmp_path / "var", env={"MESH_LOG_MAX_BYTES": "12"})
    with pytest.raises(LaunchError, match="MESH_LOG_MAX_BYTES"):
        mesh.start()
    assert not list((tmp_path / "var").glob("logs/*")), "nothing was started"
    assert os.environ.get("MESH_LOG_MAX_BYTES") is None
