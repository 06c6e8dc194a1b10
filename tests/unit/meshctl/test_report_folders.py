"""Experiments whose names reduce to one report folder (`a b` and `a_b`, one stem in two
folders), in one run or across runs, never overwrite each other's report: the later one goes to
`<folder>-2`, and the terminal says so. The same experiment run again keeps its folder."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session.report_writer import ReportWriter
from tests.unit.meshctl.test_report_writer import _result


def named(name: str, file: Path) -> ExperimentResult:
    return dataclasses.replace(_result("pushback"), name=name, path=file)


def owners(reports: Path) -> dict[str, str]:
    """Folder -> the experiment whose result.json it holds."""
    return {
        d.name: json.loads((d / "result.json").read_text())["name"]
        for d in reports.iterdir()
        if (d / "result.json").is_file()
    }


def run(reports: Path, *results: ExperimentResult) -> None:
    with ReportWriter(reports, reports.parent, inline=True) as writer:
        for result in results:
            writer.submit(result, 0.0, 1.0)


def test_two_names_that_reduce_alike_in_one_run_keep_both_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    run(reports, named("a b", tmp_path / "a b.yaml"), named("a_b", tmp_path / "a_b.yaml"))
    assert owners(reports) == {"a_b": "a b", "a_b-2": "a_b"}
    said = capsys.readouterr().err
    assert f"a_b.yaml: its report goes to {reports / 'a_b-2'}, since {reports / 'a_b'}" in said
    index = (reports / "index.html").read_text()
    assert 'id="a_b"' in index and 'id="a_b-2"' in index


def test_a_folder_that_holds_another_experiments_report_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    run(reports, named("a b", tmp_path / "a b.yaml"))
    run(reports, named("a_b", tmp_path / "a_b.yaml"))
    assert owners(reports) == {"a_b": "a b", "a_b-2": "a_b"}
    assert "holds the report of a b" in capsys.readouterr().err
    run(reports, named("a b", tmp_path / "a b.yaml"), named("a_b", tmp_path / "a_b.yaml"))
    assert owners(reports) == {"a_b": "a b", "a_b-2": "a_b"}  # each back in its own
    assert capsys.readouterr().err.count("its report goes to") == 1  # a_b's, said again


def test_one_stem_in_two_folders_in_one_run_keeps_both_reports(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    mine, theirs = tmp_path / "mine" / "pushback.yaml", tmp_path / "theirs" / "pushback.yaml"
    run(reports, named("pushback", mine), named("pushback", theirs))
    assert sorted(owners(reports)) == ["pushback", "pushback-2"]
    files = {json.loads((reports / d / "result.json").read_text())["file"] for d in owners(reports)}
    assert files == {str(mine), str(theirs)}


def test_the_same_experiment_again_or_repeated_keeps_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    file = tmp_path / "pushback.yaml"
    run(reports, named("pushback", file), named("pushback", file))  # --repeat 2
    run(reports, named("pushback", file))
    assert owners(reports) == {"pushback": "pushback"}
    assert "its report goes to" not in capsys.readouterr().err
