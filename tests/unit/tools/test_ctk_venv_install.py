"""tools.ctk_venv installs with uv where the project's venv has it, and with pip when uv is
missing or fails; an install neither can do is an error naming what failed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tools import ctk_venv


def _interpreter_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, uv: bool) -> None:
    bin_dir = tmp_path / "project-venv" / "bin"
    bin_dir.mkdir(parents=True)
    if uv:
        (bin_dir / "uv").write_text("")
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))


def test_uv_beside_the_interpreter_goes_first_then_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interpreter_in(tmp_path, monkeypatch, uv=True)
    venv = tmp_path / "ctk"
    uv, pip = ctk_venv.installers(venv)
    assert uv[0] == str(tmp_path / "project-venv" / "bin" / "uv")
    assert uv[1:3] == ["pip", "install"]
    assert "--compile-bytecode" in uv
    assert uv[uv.index("--python") + 1] == str(venv / "bin" / "python")
    assert pip == [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]


def test_without_uv_pip_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _interpreter_in(tmp_path, monkeypatch, uv=False)
    assert [c[1:3] for c in ctk_venv.installers(tmp_path / "ctk")] == [["-m", "pip"]]


def _runs(monkeypatch: pytest.MonkeyPatch, codes: list[int]) -> list[list[str]]:
    calls: list[list[str]] = []

    def run(command: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        code = codes[len(calls) - 1]
        return subprocess.CompletedProcess(command, code, "", f"error {len(calls)}")

    monkeypatch.setattr(subprocess, "run", run)
    return calls


def test_a_failed_uv_install_falls_back_to_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interpreter_in(tmp_path, monkeypatch, uv=True)
    calls = _runs(monkeypatch, [1, 0])
    ctk_venv._install(tmp_path / "ctk", ["chaostoolkit==1.19.0", "x"])
    assert [Path(c[0]).name for c in calls] == ["uv", "python"]
    assert all(c[-2:] == ["chaostoolkit==1.19.0", "x"] for c in calls)


def test_when_every_installer_fails_the_last_reason_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interpreter_in(tmp_path, monkeypatch, uv=True)
    _runs(monkeypatch, [1, 2])
    with pytest.raises(RuntimeError, match=re.escape("install chaostoolkit==1.19.0 x: error 2")):
        ctk_venv._install(tmp_path / "ctk", ["chaostoolkit==1.19.0", "x"])
