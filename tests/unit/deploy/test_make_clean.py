"""`make clean` and `make clean-all` say what they remove and its size, then remove exactly that
(issue 46: `.venv` 825 MB and `.peers` 791 MB with no target saying what it frees). Run on a
copy of the Makefile in a temporary folder: never on the working tree."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.deploy.deploy_sources import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

MIB = 1 << 20
RUN_STATE = ("var", "reports", ".mypy_cache")
BUILT = (".venv", ".peers")
SOURCES = ("README.md", "grpc_resilience_mesh/app.py")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A checkout's shape: the Makefile (and what it includes), sources, run state, builds."""
    for name in ("Makefile", "deploy/compose.mk", ".env"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    for name in SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("kept\n")
    for i, name in enumerate((*RUN_STATE, *BUILT)):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "sub" / "blob").write_bytes(os.urandom((i + 1) * MIB))
    return tmp_path


def make(tree: Path, target: str) -> str:
    result = subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", "")},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def sizes(output: str) -> dict[str, float]:
    """`  1.1M\tvar` lines -> {"var": 1.1} (MiB)."""
    found = re.findall(r"^  ([\d.]+)M\s+(\S+)$", output, flags=re.M)
    return {name: float(size) for size, name in found}


def total(output: str) -> float:
    """The `total 6.1M` line, in MiB (du rounds 10 and above to whole units)."""
    (size,) = re.findall(r"^total ([\d.]+)M$", output, flags=re.M)
    return float(size)


def test_clean_says_what_it_removes_and_its_size_and_keeps_the_installs(tree: Path) -> None:
    output = make(tree, "clean")
    listed = sizes(output)
    assert set(listed) == set(RUN_STATE), output
    for i, name in enumerate(RUN_STATE):
        assert i + 1 <= listed[name] <= i + 1.2, (name, output)  # the blob and its folders
    assert 6 <= total(output) <= 6.3, output
    assert output.index("total") < output.index("removed.")
    assert not any((tree / name).exists() for name in RUN_STATE)
    assert all((tree / name / "sub" / "blob").exists() for name in BUILT)
    assert all((tree / name).read_text() == "kept\n" for name in SOURCES)
    assert "nothing to remove" in make(tree, "clean")


def test_clean_all_takes_the_installs_too(tree: Path) -> None:
    output = make(tree, "clean-all")
    assert set(sizes(output)) == {*RUN_STATE, *BUILT}, output
    assert 15 <= total(output) <= 16, output
    assert not any((tree / name).exists() for name in (*RUN_STATE, *BUILT))
    assert all((tree / name).read_text() == "kept\n" for name in SOURCES)


def test_both_are_in_make_help(tree: Path) -> None:
    listed = make(tree, "help")
    assert re.search(r"make clean +Remove what runs and builds write", listed), listed
    assert re.search(r"make clean-all +`make clean`, and \.venv, \.peers", listed), listed
