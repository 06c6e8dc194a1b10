"""The quickstart's "Break an edge from any Toxiproxy client" commands, run as written against
a `mesh up` that gives its Toxiproxy API a token: the shell blocks in bash, the Python block in
this interpreter (where toxiproxy-python is installed), from a folder whose `.venv/bin/mesh`
and `var/` are this mesh's."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mesh_up_process import MeshUp, running_mesh_up

pytestmark = pytest.mark.e2e
QUICKSTART = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
HEADING = "## Break an edge from any Toxiproxy client"
EDGE = ("gateway_to_recommendation", "gateway_to_recommendation-2")


def section_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block in the section, in order."""
    text = QUICKSTART.read_text()
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    section = text[start : end if end >= 0 else len(text)]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def commands(block: str) -> list[str]:
    return [line[2:] for line in block.splitlines() if line.startswith("$ ")]


def user_folder(tmp_path: Path) -> Path:
    """A folder laid out as the docs assume: `.venv/bin/mesh` runs this checkout's `mesh`."""
    mesh = tmp_path / ".venv" / "bin" / "mesh"
    mesh.parent.mkdir(parents=True)
    mesh.write_text(f'#!/bin/sh\nexec {sys.executable} -m grpc_resilience_mesh.cli "$@"\n')
    mesh.chmod(mesh.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def shell(folder: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MESH_STATE_DIR"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def api(mesh: MeshUp, path: str, token: str | None) -> Any:
    request = urllib.request.Request(mesh.state["toxiproxy"] + path)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=5) as reply:
        return json.loads(reply.read())


def test_quickstart_toxiproxy_commands_run_as_written(tmp_path: Path) -> None:
    blocks = section_blocks()
    assert [lang for lang, _ in blocks] == ["console", "python", "console"]
    setup, python, after = blocks[0][1], blocks[1][1], blocks[2][1]
    folder = user_folder(tmp_path)
    with running_mesh_up(folder / "var") as mesh:
        token = mesh.state["admin_token"]
        assert token, "mesh up is expected to give Toxiproxy a token"
        with pytest.raises(urllib.error.HTTPError) as refused:
            api(mesh, "/proxies", None)
        assert refused.value.code == 401

        first = commands(setup)
        listed = shell(folder, "\n".join(first))
        assert listed.returncode == 0, listed.stderr
        assert set(EDGE) <= set(json.loads(listed.stdout))

        script = f"{first[0]}\n{sys.executable} - <<'PY'\n{python}PY\n"
        broke = shell(folder, script)
        assert broke.returncode == 0, broke.stderr
        for name in EDGE:
            toxics = api(mesh, f"/proxies/{name}/toxics", token)
            assert [(t["type"], t["attributes"]["latency"]) for t in toxics] == [("latency", 1500)]

        call, reset = commands(after)
        called = shell(folder, f"{first[0]}\n{call}")
        assert called.returncode == 0, called.stdout + called.stderr
        out = called.stdout + called.stderr
        assert "degraded: none" not in out and "recommendations: served by" in out, out
        assert shell(folder, f"{first[0]}\n{reset}").returncode == 0
        assert all(api(mesh, f"/proxies/{name}/toxics", token) == [] for name in EDGE)
