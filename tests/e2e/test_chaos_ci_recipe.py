"""docs/chaos-in-ci.md's recipe run as written: the GitHub job's `chaos-` steps (the GitLab
job's `script` is the same commands) in a fresh workspace with a short experiment of its own,
twice (the default branch's first pipeline, which starts the baseline; then one compared with
it), every JUnit file they write read with the standard XML parser."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "chaos-in-ci.md"

FAST = """
title: CI recipe's short outage of recommendations
hypothesis: the full policy answers every home request, degraded, and stops calling Recommend
dependency: recommendation
dependency_method: Recommend
steady_state:
  load: {rpc: [home], requests: 4, concurrency: 2}
faults:
  - {type: app_fault, service: recommendation, method: Recommend, error_rate: 1.0,
     code: UNAVAILABLE}
load: {rpc: [home], requests: 20, concurrency: 4, deadline_s: 3}
variants:
  - name: full
expectations:
  - {variant: full, metric: ok, min: 20, why: every home request is answered by the fallback}
  - {variant: full, metric: dependency_calls, max: 12, why: the breaker opens after 5 failures}
"""


def recipes() -> tuple[list[str], list[str]]:
    """The GitHub job's `chaos-` steps' `run`, and the GitLab job's `script`."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    github, gitlab = (yaml.safe_load(b) for b in blocks)
    steps = github["jobs"]["chaos"]["steps"]
    marked = [s["run"] for s in steps if str(s.get("id", "")).startswith("chaos-")]
    return [c.strip() for c in marked], [c.strip() for c in gitlab["chaos"]["script"]]


def test_the_two_recipes_run_the_same_commands() -> None:
    github, gitlab = recipes()
    assert github[0].split()[:3] == [".venv/bin/mesh", "chaos", "run"]
    assert github == gitlab and len(github) == 3


def _pipeline(work: Path, experiment: Path, baseline: Path | None) -> list[int]:
    """One pipeline in a fresh workspace (`baseline`: the cache it restores); each step's exit."""
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    if baseline is not None:
        shutil.copytree(baseline, work / "chaos" / "baseline")
    env = {**os.environ, "CHAOS_EXPERIMENTS": str(experiment), "CHAOS_KEEP_BASELINE": "true"}
    codes = []
    for command in recipes()[0]:
        if "chaos compare" in command and not _compare_there():
            codes.append(-1)
            continue
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=420,
        )
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
        codes.append(proc.returncode)
    return codes


def _compare_there() -> bool:
    return importlib.util.find_spec("grpc_resilience_mesh.cli.chaos_compare") is not None


def _cases(path: Path) -> list[Any]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root.findall("testsuite/testcase")


def test_the_recipe_runs_as_written_and_its_junit_files_parse(tmp_path: Path) -> None:
    experiment = tmp_path / "ci-fast.yaml"
    experiment.write_text(FAST)
    first = _pipeline(tmp_path / "first", experiment, None)
    assert first[0] == 0, "the short experiment held in all 3 runs"
    assert first[1] == 0  # no baseline yet: said and passed
    kept = list((tmp_path / "first" / "chaos" / "baseline").glob("*/ci-fast/result.json"))
    assert len(kept) == 1
    run_cases = _cases(tmp_path / "first" / "chaos" / "run.xml")
    assert {(c.get("classname"), c.get("name")) for c in run_cases} == {
        ("ci-fast.full", "fault: ok >= 20"),
        ("ci-fast.full", "fault: dependency_calls <= 12"),
    }
    second = _pipeline(tmp_path / "second", experiment, tmp_path / "first" / "chaos" / "baseline")
    assert second[0] == 0
    if second[1] == -1:
        pytest.skip("the compare step only: `mesh chaos compare` is not in this tree yet")
    compare = tmp_path / "second" / "chaos" / "compare-ci-fast.xml"
    cases = _cases(compare)
    assert cases, "a case per comparison check"
    failed = [c for c in cases if c.find("failure") is not None]
    assert (second[1] == 1) == bool(failed), "compare exits 1 exactly when a check regressed"
