"""grpc_resilience_mesh.bench.counted: a process's instructions are the sum of its callgrind dumps,
its exit file included once it has exited; every process of this interpreter runs under
callgrind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grpc_resilience_mesh.bench import counted


def _dump(path: Path, total: int) -> None:
    path.write_text(f"# callgrind format\nversion: 1\ncmd: python\nevents: Ir\ntotals: {total}\n")


def test_the_totals_line_is_read_and_a_file_without_one_is_an_error(tmp_path: Path) -> None:
    _dump(tmp_path / "cg.1.1", 1234)
    assert counted._total(tmp_path / "cg.1.1") == 1234
    (tmp_path / "cg.1.2").write_text("events: Ir\n")
    with pytest.raises(counted.CountError, match="no totals"):
        counted._total(tmp_path / "cg.1.2")


def test_an_exited_process_counts_every_dump_and_its_exit_file(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    # exited but not waited for: a zombie, as the bench's client is when it is read
    while not counted._zombie(child.pid):
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)
    try:
        pid = child.pid
        _dump(tmp_path / f"cg.{pid}.1", 100)
        _dump(tmp_path / f"cg.{pid}.2", 20)
        (tmp_path / f"cg.{pid}").write_text("")
        counter = counted.Counter(tmp_path)
        assert counter.instructions(pid) == 120  # the exit file is still empty: not yet written
        _dump(tmp_path / f"cg.{pid}", 3)
        assert counter.instructions(pid) == 123
        assert counter.giga(pid) == pytest.approx(123e-9)
    finally:
        child.wait()


def test_only_this_interpreters_processes_are_wrapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []

    def record(self: object, args: object, *a: object, **kw: object) -> None:
        seen.append(args)

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    counted._wrap_popen(tmp_path)
    subprocess.Popen([sys.executable, "-m", "x"])
    subprocess.Popen(["callgrind_control", "--dump", "1"])
    assert seen[0] == [
        *counted.VALGRIND,
        f"--callgrind-out-file={tmp_path}/cg.%p",
        sys.executable,
        "-m",
        "x",
    ]
    assert seen[1] == ["callgrind_control", "--dump", "1"]


def test_without_valgrind_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", os.devnull)
    assert counted.main([]) == 2
    assert "needs valgrind" in capsys.readouterr().err


def test_a_running_process_is_not_taken_for_an_exited_one() -> None:
    assert not counted._zombie(os.getpid())


def test_a_missing_policy_is_named_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        pytest.skip("valgrind is not installed: main() stops before the policy")
    assert counted.main(["--policy", str(tmp_path / "none.yaml")]) == 2
    assert f"no policy at {tmp_path / 'none.yaml'}" in capsys.readouterr().err
