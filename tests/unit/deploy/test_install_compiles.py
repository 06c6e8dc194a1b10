"""`make venv` and `make demo` install with bytecode: site-packages and the project's own packages
compiled, so a service's start under PYTHONDONTWRITEBYTECODE=1 compiles nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.unit.deploy.deploy_sources import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _recipe(stamp: str, venv: Path) -> list[str]:
    """The commands `make` would run to build `stamp` into an empty `venv` (a dry run)."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", f"VENV={venv}", f"{venv}/{stamp}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ.get("PATH", "")},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _project_dirs() -> set[str]:
    """The folders of the wheel's top-level packages (pyproject's packages.find) and of the
    repository's libraries (libs/*/src), as the Makefile names them."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    find = pyproject["tool"]["setuptools"]["packages"]["find"]
    tops = {pattern.split(".")[0].rstrip("*") for pattern in find["include"]}
    found = {Path(where, top) for where in find.get("where", ["."]) for top in tops}
    dirs = {d.as_posix() for d in found if (ROOT / d / "__init__.py").is_file()}
    assert len(dirs) == len(tops), (tops, dirs)
    return dirs | {f"libs/{p.parent.name}/src" for p in ROOT.glob("libs/*/pyproject.toml")}


@pytest.mark.parametrize("stamp", [".installed", ".installed-tools"])
def test_install_byte_compiles_everything(stamp: str, tmp_path: Path) -> None:
    lines = _recipe(stamp, tmp_path / "venv")
    installs = [line for line in lines if "pip install" in line and "-e " in line]
    assert installs and not any("--no-compile" in line for line in installs)
    # pip compiles what it installs unless told not to; uv only when told to (it did not, and
    # every worker a job experiment started compiled grpc and redis again: 1.5-2.2 s a start).
    for line in installs:
        for command in line.split("||"):
            if "uv pip install" in command:
                assert "--compile-bytecode" in command, command
    compiles = [line for line in lines if "-m compileall" in line]
    assert compiles, lines
    words = set(re.split(r"[\s;&|]+", compiles[-1]))  # the recipe's `;` or `&&` after the list
    assert _project_dirs() <= words, compiles[-1]
