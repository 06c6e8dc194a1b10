"""journal.json: a run of ours as a Chaos Toolkit journal; deviated is a missed expectation,
failed an aborted run, and the figures are the ones result.json holds."""

from __future__ import annotations

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.export.journal import to_journal
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult, Verdict
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult


def _result(passed: bool, aborted: str = "") -> ExperimentResult:
    path, exp = load_experiment("provider-outage")
    full = next(v for v in exp.variants if v.name == "full")
    variant = VariantResult(full, "full", steady_before={"ok": 50.0, "error_rate": 0.0})
    variant.phases["fault"] = PhaseResult(
        LoadResult(), Snapshot(), {"ok": 100.0, "dependency_calls": 12.0}
    )
    variant.steady_after = {"ok": 50.0, "error_rate": 0.0}
    verdicts = [
        Verdict("full", "fault", "ok", 100.0, ">= 100", True),
        Verdict("full", "fault", "dependency_calls", 12.0, "<= 14", passed),
    ]
    return ExperimentResult("provider-outage", path, exp, [variant], verdicts, aborted=aborted)


def test_a_run_that_held_completes_without_deviating() -> None:
    journal = to_journal(_result(True), 1000.0, 1030.0)
    assert (journal["status"], journal["deviated"]) == ("completed", False)
    assert journal["duration"] == 30.0
    (before,) = journal["steady_states"]["before"]["probes"]
    assert before["output"] == {"ok": 50.0, "error_rate": 0.0} and before["tolerance_met"]
    loads = {r["activity"]["name"]: r["output"] for r in journal["run"]}
    assert loads["full: load (fault)"]["dependency_calls"] == 12.0


def test_a_missed_expectation_deviates_and_names_it() -> None:
    journal = to_journal(_result(False), 1000.0, 1030.0)
    assert (journal["status"], journal["deviated"]) == ("completed", True)
    after = journal["steady_states"]["after"]
    assert not after["steady_state_met"]
    missed = [p for p in after["probes"] if not p["tolerance_met"]]
    assert [(p["activity"]["name"], p["output"]) for p in missed] == [
        ("full/fault dependency_calls <= 14", 12.0)
    ]


def test_an_aborted_run_fails() -> None:
    journal = to_journal(_result(False, aborted="steady state failed: x"), 1000.0, 1030.0)
    assert (journal["status"], journal["deviated"]) == ("failed", False)
