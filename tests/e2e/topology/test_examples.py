"""Every example experiment under examples/ run as a user runs it, `mesh chaos run FILE` in a
subprocess: against the embedded Toxiproxy as the files say, and against the real one (the
same files, their topology pointed at it). Each asserts the exit code, the report's verdict,
and that no toxic outlived the run; the guard's example also that the guard stopped the load
and the faults were gone within 2 s of the breach."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy, binary_path
from grpc_resilience_mesh.services import safe_yaml

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[3]
MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]
RUN_TIMEOUT_S = 180
EXPECTED = {
    "examples/chain/experiments/slow-back.yaml": (0, "held"),
    "examples/chain/experiments/guard-trips.yaml": (3, "aborted by guard: error_rate"),
    "examples/chain/experiments/slow-watch.yaml": (0, "held"),
    "examples/kv/experiments/slow-link.yaml": (0, "held"),
}


def test_every_example_experiment_is_run_here() -> None:
    found = {str(p.relative_to(ROOT)) for p in ROOT.glob("examples/*/experiments/*.yaml")}
    assert found == set(EXPECTED), "add the new example experiment to EXPECTED"


@pytest.fixture(scope="module")
def real_toxiproxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not os.access(binary_path(), os.X_OK):
        pytest.skip(f"no real Toxiproxy at {binary_path()}: `make peers` builds it")
    log = tmp_path_factory.mktemp("toxiproxy") / "toxiproxy.log"
    server = RealToxiproxy(log_path=log).start()
    try:
        yield server.base_url
    finally:
        server.stop()


def pointed_at(url: str, experiment: Path, tmp_path: Path) -> Path:
    """A copy of the experiment's example folder whose topology uses the Toxiproxy at `url`
    and starts its services from the checkout; the copy of `experiment` in it."""
    example = experiment.parents[1]
    copy = tmp_path / example.name
    shutil.copytree(example, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    topology = copy / "topology.yaml"
    text = topology.read_text()
    text = re.sub(r"(?m)^toxiproxy: embedded$", f"toxiproxy: {url}", text)
    text = text.replace("cwd: ../..", f"cwd: {ROOT}")
    assert f"toxiproxy: {url}" in text and "../.." not in text, text
    topology.write_text(text)
    return copy / experiment.relative_to(example)


def run(experiment: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Any, str]:
    """The run's process, its result.json and its report.md."""
    reports = tmp_path / "reports"
    env = {**os.environ, "MESH_CHAOS_LEVER": str(tmp_path / "lever")}  # no other test's lever
    command = [*MESH, "chaos", "run", str(experiment), "--reports", str(reports)]
    proc = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    results = list(reports.glob("*/result.json"))
    assert len(results) == 1, proc.stdout + proc.stderr
    report = (results[0].parent / "report.md").read_text()
    return proc, json.loads(results[0].read_text()), report


def check(path: str, proc: subprocess.CompletedProcess[str], result: Any, report: str) -> None:
    code, verdict = EXPECTED[path]
    said = proc.stdout + proc.stderr
    assert (proc.returncode, result["exit_code"]) == (code, code), said
    assert result["verdict"].startswith(verdict), said
    assert result["rollback_failures"] == []
    assert result["toxics_after_rollback"] and not any(result["toxics_after_rollback"].values())
    assert f"verdict: **{result['verdict']}**" in report
    if code == 0:
        assert all(e["held"] for e in result["expectations"]), result["expectations"]
        return
    experiment = safe_yaml.load_file(str(ROOT / path))
    assert result["breach"]["metric"] == "error_rate"
    assert result["breach"]["value"] > result["breach"]["bound"]
    assert result["load"]["requests"] < experiment["load"]["requests"]  # the guard stopped it
    assert 0 <= result["rollback_s"] < 2.0


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_example_with_the_embedded_toxiproxy(path: str, tmp_path: Path) -> None:
    check(path, *run(ROOT / path, tmp_path))


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_example_with_the_real_toxiproxy(path: str, real_toxiproxy: str, tmp_path: Path) -> None:
    check(path, *run(pointed_at(real_toxiproxy, ROOT / path, tmp_path), tmp_path))
