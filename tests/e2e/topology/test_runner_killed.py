"""A topology run that ends early: killed with SIGKILL mid-fault (every process it started ends
within 5 s, measured), and stopped by its guard during the steady state (no fault goes in)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.topology.test_topology_run import MESH, ROOT, Case
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e


def stat_of(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command's name (state first), or None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Running: a zombie its new parent has yet to reap counts as gone."""
    fields = stat_of(pid)
    return fields is not None and fields[0] != "Z"


def children_of(parent: int) -> list[int]:
    """The PIDs whose parent is `parent` now."""
    found = []
    for entry in Path("/proc").iterdir():
        if (
            entry.name.isdigit()
            and (fields := stat_of(int(entry.name)))
            and fields[1] == str(parent)
        ):
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads processes from /proc")
def test_a_runner_killed_mid_fault_leaves_no_process_behind(tmp_path: Path) -> None:
    case = Case(tmp_path, requests=20_000)
    env = {**os.environ, "MESH_CHAOS_LEVER": str(case.lever), "COLUMNS": "200"}
    args = [*MESH, "chaos", "run", str(tmp_path / "exp.yaml"), "--reports", str(tmp_path / "r")]
    run = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    started: list[int] = []
    try:
        assert run.stdout is not None
        for line in run.stdout:
            if line.startswith("faults in"):
                break
        started = children_of(run.pid)
        service = case.left_running()
        assert len(started) == 2 and len(service) == 1 and service[0] in started, started
        os.kill(run.pid, signal.SIGKILL)
        killed = time.monotonic()
        run.wait(10)
        wait_until(
            lambda: not any(alive(pid) for pid in started), timeout_s=5.0, what="kv, Toxiproxy"
        )
        took_s = time.monotonic() - killed
    finally:
        for pid in started:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if run.poll() is None:
            run.kill()
            run.wait(10)
    print(f"\nkv and the embedded Toxiproxy gone {took_s:.3f} s after the runner's SIGKILL")
    assert case.left_running() == []


def test_a_guard_breach_in_the_steady_state_ends_the_run_before_any_fault(
    tmp_path: Path,
) -> None:
    case = Case(tmp_path)
    experiment = tmp_path / "exp.yaml"
    text = experiment.read_text().replace("{requests: 20,", "{requests: 2000,")
    experiment.write_text(text + "guard: {max_p99_s: 0.000001}\n")
    done = case.run()
    assert done.returncode == 3, done.stdout + done.stderr
    result = case.result()
    assert result["verdict"].startswith("aborted by guard (steady state): p99_s"), result
    assert result["breach"]["metric"] == "p99_s" and result["breach"]["value"] > 0.000001
    assert "faults in" not in done.stdout and "load" not in result, done.stdout
    assert 10 <= result["steady_state"]["requests"] < 2000, result["steady_state"]
    assert case.left_running() == []


def test_a_steady_state_shorter_than_one_check_is_judged_when_it_ends(tmp_path: Path) -> None:
    """20 fast calls end before the guard's first check (0.25 s): the guard judges them once
    more at the end, so a breach there still ends the run before any fault."""
    case = Case(tmp_path)
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(experiment.read_text() + "guard: {max_p99_s: 0.000001}\n")
    done = case.run()
    assert done.returncode == 3, done.stdout + done.stderr
    result = case.result()
    assert result["verdict"].startswith("aborted by guard (steady state): p99_s"), result
    assert result["steady_state"]["requests"] == 20, result["steady_state"]
    assert "faults in" not in done.stdout and "load" not in result, done.stdout
    assert case.left_running() == []
