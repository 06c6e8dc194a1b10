"""The project as a pip user gets it (issue 42, item 2): into a clean venv, the resilience library
and the project, nothing else, no make. The base install runs `mesh up` and exports OTLP to a
collector (no grpcio-csds, so no xds-protos over opentelemetry-proto's files), and refuses
`--xds` naming the extra. The `[xds]` extra installed after it overwrites those files
(grpc/grpc#42428): `mesh up` then refuses OTLP naming the repair, the repair puts them right,
and `mesh up --xds` exports OTLP with CSDS answering."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.otel_protos import PROBE, REPAIR
from grpc_resilience_mesh.services.settings import XDS_EXTRA
from tests.integration.packaging.otlp_collector import OtlpCollector
from tests.support.peers import peer_binary
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[3]
UV = Path(sys.executable).parent / "uv"
SOURCES = ("pyproject.toml", "README.md", "grpc_resilience_mesh", "libs/grpc-aio-resilience")
HOPS = {"gateway", "recommendation", "profile"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.install,
    pytest.mark.skipif(not UV.is_file(), reason="uv is installed by `make venv`"),
]


def _run(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def installed(tmp_path: Path, *more: str) -> Path:
    """A clean venv with `uv pip install ./libs/grpc-aio-resilience .` from a copy of the tree
    (the build writes build/ folders into it), then each of `more` (".[xds]") in turn."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    (src / "libs").mkdir(parents=True)
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, src / name)
    venv = tmp_path / "venv"
    # --seed: pip in the venv, as `python -m venv` gives a pip user (the repair uses it)
    made = _run([str(UV), "venv", "--seed", "--quiet", "--python", sys.executable, str(venv)])
    assert made.returncode == 0, made.stderr
    for wanted in (["./libs/grpc-aio-resilience", "."], *([m] for m in more)):
        pip = [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python")]
        done = _run([*pip, *wanted], cwd=src)
        assert done.returncode == 0, done.stderr[-2000:]
    return venv


def user_env(venv: Path, **more: str) -> dict[str, str]:
    """A user's shell with `venv` on PATH: nothing of this suite's venv, OTel or mesh settings."""
    dropped = ("OTEL_", "MESH_", "PYTHON", "VIRTUAL_ENV", "GRPC_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    return {**env, "PATH": f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}", **more}


def distributions(venv: Path) -> set[str]:
    listed = _run(
        [str(UV), "pip", "list", "--format", "json", "--python", str(venv / "bin/python")]
    )
    return {p["name"].lower() for p in json.loads(listed.stdout)}


@contextmanager
def mesh_up(venv: Path, env: dict[str, str], state_dir: Path, *args: str) -> Iterator[Path]:
    """That venv's `mesh up --auto-ports` in the foreground until its state file is written;
    stopped with SIGTERM (as Ctrl-C) on the way out. Yields its output's file."""
    log = state_dir.parent / f"{state_dir.name}-up.log"
    command = [str(venv / "bin" / "mesh"), "up", "--auto-ports", "--no-console"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*command, "--state-dir", str(state_dir), *args],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=state_dir.parent,
        )  # fmt: skip
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"mesh up exited {proc.returncode}: {log.read_text()}")
            return (state_dir / "mesh.json").is_file()

        wait_until(up, 120, "mesh up writing its state file", 0.1)
        yield log
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def calls_reach_the_collector(venv: Path, env: dict[str, str], collector: OtlpCollector) -> None:
    """A few `mesh call home` as a second terminal makes them; every hop's spans arrive."""
    for user in ("u-0001", "u-0002", "u-0003"):
        call = _run([str(venv / "bin" / "mesh"), "call", "home", "--user", user], env=env)
        assert call.returncode == 0, call.stdout + call.stderr

    def every_hop() -> dict[str, int]:
        spans = collector.spans()
        return spans if HOPS <= set(spans) else {}

    spans = wait_until(
        every_hop,
        60,
        f"spans of {sorted(HOPS)} at the collector",
        0.1,
    )
    assert all(spans[hop] > 0 for hop in HOPS), spans


def test_the_base_install_exports_otlp_and_refuses_xds_naming_the_extra(tmp_path: Path) -> None:
    venv = installed(tmp_path)
    assert not distributions(venv) & {"grpcio-csds", "xds-protos"}
    env = user_env(venv)
    refused = _run(
        [str(venv / "bin/mesh"), "up", "--xds", "--auto-ports", "--state-dir", str(tmp_path / "x")],
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert XDS_EXTRA in " ".join(refused.stdout.split())
    assert not (tmp_path / "x" / "mesh.json").exists()  # nothing started
    with OtlpCollector() as collector:
        env = user_env(venv, OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint)
        state_dir = tmp_path / "var"
        with mesh_up(venv, env, state_dir):
            calls_reach_the_collector(venv, {**env, "MESH_STATE_DIR": str(state_dir)}, collector)


def test_the_xds_extra_after_the_base_needs_the_repair_then_exports_under_xds(
    tmp_path: Path,
) -> None:
    venv = installed(tmp_path, ".[xds]")
    python = str(venv / "bin" / "python")
    assert {"grpcio-csds", "xds-protos"} <= distributions(venv)
    # installed last, xds-protos's OTLP v0.9 files are the ones in place (grpc/grpc#42428)
    assert _run([python, "-c", PROBE]).returncode != 0
    with OtlpCollector() as collector:
        env = user_env(venv, OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint)
        mesh = [str(venv / "bin/mesh"), "up", "--xds", "--auto-ports"]
        refused = _run([*mesh, "--state-dir", str(tmp_path / "x")], env=env, cwd=tmp_path)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert REPAIR in " ".join(refused.stdout.split())
        assert not (tmp_path / "x" / "mesh.json").exists()
        repaired = _run(REPAIR.replace("python", python, 1).split(), env=env, cwd=tmp_path)
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        assert _run([python, "-c", PROBE]).returncode == 0
        plane = peer_binary("mesh-xds")  # on PATH, as a pip user would put it
        env["PATH"] = f"{plane.parent}:{env['PATH']}"
        state_dir = tmp_path / "var"
        with mesh_up(venv, env, state_dir, "--xds"):
            state = json.loads((state_dir / "mesh.json").read_text())
            assert state["extra"]["xds_admin"]
            env["MESH_STATE_DIR"] = str(state_dir)
            calls_reach_the_collector(venv, env, collector)
            status = _run([str(venv / "bin/mesh"), "status", "--json", "-"], env=env)
            assert status.returncode == 0, status.stderr
            csds = json.loads(status.stdout)["csds"]
            assert csds["gateway"]["versions"] and not csds["gateway"]["not_acked"], csds
