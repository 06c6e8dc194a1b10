"""tools.compare_calibration: the two files it runs are one experiment, valid, and differ only by
the gateway's breaker on Recommend; a pair's counts come from `mesh chaos compare`'s exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from tools import compare_calibration as calibration


def test_the_baseline_and_weakened_files_validate_and_differ_by_the_breaker(
    tmp_path: Path,
) -> None:
    base, weak = calibration.write_files(tmp_path)
    assert base.name == weak.name == "provider-outage.yaml"
    _, base_exp = load_experiment(str(base))
    load_experiment(str(weak))  # raises on a file the runner would refuse
    assert [v.name for v in base_exp.variants] == ["full"]
    assert {e.variant for e in base_exp.expectations} == {"full"}
    base_doc, weak_doc = yaml.safe_load(base.read_text()), yaml.safe_load(weak.read_text())
    edge = weak_doc["variants"][0]["overrides"]["edges"]["gateway_to_recommendation"]
    assert edge.pop("breaker") == {"enabled": False}
    assert weak_doc == base_doc


def test_counts_come_from_the_compare_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exits = iter([0, 1, 1, 1, 0, 0])  # pair 1 right, pair 2 a false alarm, pair 3 a miss

    def fake_run(file: Path, reports: Path, work: Path, repeat: int, reuse: bool) -> Path:
        return reports / "result.json"

    monkeypatch.setattr(calibration, "run_once", fake_run)
    monkeypatch.setattr(calibration, "compare_exit", lambda *args: next(exits))
    assert calibration.main(["--pairs", "3", "--work", str(tmp_path)]) == 0
    assert "false alarms 1 of 3, misses 1 of 3" in capsys.readouterr().out
