"""`mesh chaos compare` on result files of real runs (provider-outage's `full` variant, 3 repeats,
trimmed to what the comparison reads): its exit codes, its JSON, its JUnit XML, and a baseline
taken from a folder of earlier runs."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app

FIXTURES = Path(__file__).parent / "compare_fixtures"
BASELINE = FIXTURES / "baseline.json"
WEAKENED = FIXTURES / "weakened.json"
"""The same experiment with the gateway's breaker on Recommend switched off."""


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["chaos", "compare", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def as_json(*args: str) -> tuple[int, dict[str, Any]]:
    """With `--json -` stdout holds the document alone (the table goes to stderr)."""
    result = CliRunner().invoke(app, ["chaos", "compare", *args, "--json", "-"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def expectation_names(path: Path) -> set[str]:
    data = json.loads(path.read_text())
    return {f"{v['variant']} {v['phase']} {v['metric']} {v['bound']}" for v in data["verdicts"]}


def test_a_result_compared_with_itself_is_within_noise_everywhere() -> None:
    code, doc = as_json(str(BASELINE), str(BASELINE))
    assert code == 0
    assert {c["status"] for c in doc["checks"]} == {"WITHIN NOISE"}
    assert doc["regressions"] == 0 and doc["baseline"]["runs"] == 3


def test_the_weakened_policy_regresses_what_the_breaker_bounds() -> None:
    code, doc = as_json(str(BASELINE), str(WEAKENED))
    assert code == 1
    status = {(c["phase"], c["metric"]): c["status"] for c in doc["checks"]}
    for metric in ("dependency_calls", "dependency_calls_all", "total_ms", "max_ms"):
        assert status[("fault", metric)] == "REGRESSED", metric
    assert status[("fault", "ok")] == "WITHIN NOISE"  # the fallback answers either way
    assert status[("fault", "p50/steady")] == "REGRESSED"  # a hang per request, not a fast fallback


def test_the_other_way_round_the_breaker_is_an_improvement_and_exits_0() -> None:
    code, doc = as_json(str(WEAKENED), str(BASELINE))
    assert code == 0
    status = {(c["phase"], c["metric"]): c["status"] for c in doc["checks"]}
    assert status[("fault", "dependency_calls")] == "IMPROVED"


def test_the_table_names_the_test_its_effect_and_p_value() -> None:
    code, out = invoke(str(BASELINE), str(WEAKENED))
    assert code == 1
    assert "REGRESSED" in out and "Mann-Whitney" in out and "p=0.05" in out
    assert "bootstrap 95% CI" in out and "decided by:" in out


def test_bad_input_exits_2_with_a_reason(tmp_path: Path) -> None:
    other = json.loads(BASELINE.read_text())
    other["name"] = "fallback-trap"
    (tmp_path / "other.json").write_text(json.dumps(other))
    once = json.loads(BASELINE.read_text())
    once["repeat"] = []
    (tmp_path / "once.json").write_text(json.dumps(once))
    (tmp_path / "broken.json").write_text("{")
    cases = {
        str(tmp_path / "missing.json"): "no such file or folder",
        str(tmp_path / "other.json"): "different experiments",
        str(tmp_path / "once.json"): "no repeats",
        str(tmp_path / "broken.json"): "not JSON",
    }
    for current, reason in cases.items():
        code, out = invoke(str(BASELINE), current)
        assert code == 2, current
        assert reason in " ".join(out.split()), out


def test_a_folder_of_earlier_runs_gives_the_last_n_that_held(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for i, held in enumerate([True, True, False, True]):
        folder = runs / f"run{i}" / "provider-outage"
        folder.mkdir(parents=True)
        data = json.loads(BASELINE.read_text())
        data["held"] = held
        (folder / "result.json").write_text(json.dumps(data))
        os.utime(folder / "result.json", (1_000_000 + i, 1_000_000 + i))
    code, doc = as_json(str(runs), str(BASELINE), "--last", "2")
    assert code == 0
    files = [Path(p).parent.parent.name for p in doc["baseline"]["files"]]
    assert files == ["run1", "run3"]  # run2 did not hold; run0 is older than the last 2
    assert doc["baseline"]["runs"] == 6
    dependency = next(c for c in doc["checks"] if c["metric"] == "dependency_calls")
    assert len(dependency["baseline"]) == 6


def test_a_run_folder_stands_for_its_result_json(tmp_path: Path) -> None:
    folder = tmp_path / "provider-outage"
    folder.mkdir()
    shutil.copy(WEAKENED, folder / "result.json")
    code, _ = invoke(str(BASELINE), str(folder))
    assert code == 1


def test_junit_parses_and_names_every_expectation(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "compare.xml"
    code, _ = invoke(str(BASELINE), str(WEAKENED), "--junit", str(path))
    assert code == 1
    root = ET.parse(path).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert expectation_names(BASELINE) <= set(cases)
    assert "full fault p95/steady lower is better" in cases
    failure = cases["full fault dependency_calls >= 10 and <= 14"].find("failure")
    assert failure is not None
    message = failure.get("message", "")
    assert "baseline 10 (3 runs)" in message and "current 104 (3 runs)" in message
    assert "Mann-Whitney" in (failure.text or "") and "why the bound" in (failure.text or "")
    assert cases["full fault ok >= 100"].find("failure") is None
    assert int(root.get("failures", "0")) == sum(
        c.find("failure") is not None for c in cases.values()
    )


def test_a_busier_machine_slowing_every_request_alike_is_not_a_regression(tmp_path: Path) -> None:
    """Every latency of the run, its steady-state checks' included, three times longer: the
    requests over the run's own steady-state median are what is compared."""
    data = json.loads(BASELINE.read_text())
    for variant in data["variants"]:
        for check in ("steady_before", "steady_after"):
            variant[check]["p50_ms"] *= 3
        for phase in variant["phases"].values():
            for sample in phase["samples"]:
                sample["latency_ms"] *= 3
    (tmp_path / "busy.json").write_text(json.dumps(data))
    code, doc = as_json(str(BASELINE), str(tmp_path / "busy.json"))
    assert code == 0
    latency = [c for c in doc["checks"] if c["kind"] == "latency"]
    assert len(latency) == 4 and {c["status"] for c in latency} == {"WITHIN NOISE"}
