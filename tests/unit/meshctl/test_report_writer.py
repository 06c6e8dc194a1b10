"""Reports written by a worker process at idle priority while the next experiment runs: every
one written, in order, however the run ends; a failure raised naming its experiment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session import report_writer
from grpc_resilience_mesh.chaos.session.errors import ReportFailed
from grpc_resilience_mesh.chaos.session.report_writer import IDLE_NICE, ReportWriter
from grpc_resilience_mesh.launch import private
from tests.unit.chaos.render_fixtures import demo_result


def _result(name: str) -> ExperimentResult:
    result = demo_result(name)
    for v in result.variants:  # no load outcomes: no plots to draw (test_plots.py's)
        for phase in v.phases.values():
            phase.load.outcomes = []
    return result


def test_reports_are_written_in_the_background_by_an_idle_worker(tmp_path: Path) -> None:
    with ReportWriter(tmp_path / "reports", tmp_path) as writer:
        assert writer._pool is not None
        worker_nice = writer._pool.submit(os.nice, 0).result(timeout=60)
        writer.submit(_result("pushback"), 0.0, 1.0)
        writer.submit(_result("worker-crash"), 1.0, 2.0)
    assert worker_nice == IDLE_NICE  # the runner's own priority is untouched
    assert os.nice(0) < IDLE_NICE
    for name in ("pushback", "worker-crash"):
        folder = tmp_path / "reports" / name
        assert {"report.md", "result.json", "journal.json"} <= {p.name for p in folder.iterdir()}
    index = (tmp_path / "reports" / "index.html").read_text()
    assert "pushback" in index and "worker-crash" in index  # the last index saw both


def test_the_reports_of_a_run_that_failed_are_still_written(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), ReportWriter(tmp_path / "reports", tmp_path) as writer:
        writer.submit(_result("pushback"), 0.0, 1.0)
        raise KeyboardInterrupt
    assert (tmp_path / "reports" / "pushback" / "report.md").is_file()


def test_a_report_that_fails_is_raised_naming_its_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> Path:
        raise OSError("disk full")

    monkeypatch.setattr(report_writer, "write_report", broken)  # in line: the patch applies
    with (
        pytest.raises(ReportFailed, match="the report of pushback could not be written: "),
        ReportWriter(tmp_path, tmp_path, inline=True) as writer,
    ):
        writer.submit(_result("pushback"), 0.0, 1.0)
    with (  # and from the worker, where the folder cannot be made
        pytest.raises(ReportFailed, match="the report of pushback could not be written: "),
        ReportWriter(tmp_path / "file", tmp_path) as writer,
    ):
        (tmp_path / "file").write_text("not a folder")
        writer.submit(_result("pushback"), 0.0, 1.0)


def test_a_failed_report_stops_none_of_the_reports_after_it(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "pushback").write_text("a file where its folder goes")
    with (
        pytest.raises(ReportFailed, match="the report of pushback"),
        ReportWriter(reports, tmp_path) as writer,
    ):
        writer.submit(_result("pushback"), 0.0, 1.0)
        writer.submit(_result("worker-crash"), 1.0, 2.0)
    assert (reports / "worker-crash" / "report.md").is_file()


def test_the_worker_writes_reports_under_the_users_umask_not_the_runners_private_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner sets umask 077 for the mesh's state (private_umask); reports are shared."""
    monkeypatch.setattr(private, "_user_umask", [0o022])  # as private_umask() records it
    before = os.umask(private.PRIVATE_UMASK)
    try:
        with ReportWriter(tmp_path / "reports", tmp_path) as writer:
            writer.submit(_result("pushback"), 0.0, 1.0)
    finally:
        os.umask(before)
    for name in ("report.md", "result.json", "journal.json"):
        mode = (tmp_path / "reports" / "pushback" / name).stat().st_mode & 0o777
        assert mode == 0o644, (name, oct(mode))
