"""A skipped or errored variant makes its experiment partial, never held: in its table, the
verdict screen and its totals line, result.json, the journal, the index page and the exit code
of `mesh chaos run` (5; a miss elsewhere still exits 1). The demo's form leaves out the
variants that need mesh-xds when it is not built, and says which."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.export.journal import to_journal
from grpc_resilience_mesh.chaos.report.index import write_index
from grpc_resilience_mesh.chaos.report.result_json import to_json
from grpc_resilience_mesh.chaos.report.tables import print_result
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.run.measure import evaluate
from grpc_resilience_mesh.chaos.session.xds import without_xds
from grpc_resilience_mesh.cli.chaos_verdict import (
    PARTIAL_EXIT,
    exit_code,
    totals_line,
    verdict_screen,
)
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult

NO_XDS = "an xds variant needs .peers/bin/mesh-xds: run `make peers` (needs go)"
"""What the runner's wire_xds says when mesh-xds is not built."""

PASSING = {
    "toxiproxy-latency": {"trace_lag_ms_p50": 101.0, "trace_lead_ms_p50": 2.0},
    "app-fault-abort": {
        "degraded_rate": 0.3,
        "trace_failed_unserved": 0.0,
        "trace_fault_events": 290.0,
    },
}
"""Figures within every bound of the variants that run in the demo's fault-sources."""


def fault_sources(skip: str = NO_XDS, error: str = "", degraded: float = 0.3) -> ExperimentResult:
    """The demo's fault-sources as the runner leaves it when xds-abort could not run."""
    path, exp = load_experiment("fault-sources", short_sweep=True)
    result = ExperimentResult("fault-sources", path, exp)
    for variant in exp.variants:
        v = VariantResult(variant, variant.policy)
        if variant.xds:
            v.skipped, v.error = ("", error) if error else (skip, "")
        else:
            metrics = {**PASSING[variant.name]}
            if variant.name == "app-fault-abort":
                metrics["degraded_rate"] = degraded
            v.phases["fault"] = PhaseResult(LoadResult(), Snapshot(), metrics)
        result.variants.append(v)
    result.verdicts = evaluate(result)
    return result


def held_one() -> ExperimentResult:
    path, exp = load_experiment("fault-sources", short_sweep=True)
    keep = [v for v in exp.variants if not v.xds]
    exp = exp.model_copy(
        update={
            "variants": keep,
            "expectations": [e for e in exp.expectations if e.variant in PASSING],
        }
    )
    result = ExperimentResult("held-one", path, exp)
    for variant in keep:
        v = VariantResult(variant, variant.policy)
        v.phases["fault"] = PhaseResult(LoadResult(), Snapshot(), dict(PASSING[variant.name]))
        result.variants.append(v)
    result.verdicts = evaluate(result)
    return result


def test_a_skipped_variant_makes_its_experiment_partial_never_held() -> None:
    result = fault_sources()
    assert result.verdicts and all(v.passed for v in result.verdicts)  # what ran held
    assert not result.held
    assert result.partial == "2 of 3 variants ran"
    assert result.verdict == "partial (2 of 3 variants ran)"
    assert result.not_run() == [f"xds-abort skipped: {NO_XDS}"]
    assert held_one().verdict == "held"


def test_an_errored_variant_is_partial_too_and_a_miss_outweighs_both() -> None:
    errored = fault_sources(error="policy swap failed, no variant measured: refused")
    assert errored.verdict == "partial (2 of 3 variants ran)"
    missed = fault_sources(degraded=0.05)  # app-fault-abort's 30% not seen: a real miss
    assert (missed.partial, missed.verdict) == ("", "did not hold")


def test_a_partial_in_any_repeat_makes_the_repeated_result_partial() -> None:
    first, last = held_one(), fault_sources()
    last.repeats = [first, last]
    assert last.partial == "2 of 3 variants ran" and not last.held


def test_the_table_and_its_hypothesis_line_say_partial_and_why() -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    print_result(console, fault_sources())
    text = console.export_text()
    assert "hypothesis partial (2 of 3 variants ran)" in text
    assert "hypothesis held" not in text
    assert "xds-abort: an xds variant needs .peers/bin/mesh-xds" in " ".join(text.split())


def test_the_verdict_screen_and_totals_count_partial_apart() -> None:
    results = [held_one(), fault_sources(), fault_sources(degraded=0.05)]
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(verdict_screen(results, 120))
    text = " ".join(console.export_text().split())
    assert "partial: 1 of 3 hypotheses not wholly tested" in text
    assert "missed: 1 of 3 hypotheses did not hold" in text
    assert "fault-sources partial (2 of 3 variants ran)" in text  # the verdict table's row
    assert totals_line(results) == (
        f"1 of 3 hypotheses held, 1 partial (fault-sources: xds-abort skipped: {NO_XDS}), "
        "1 did not hold"
    )
    assert totals_line([held_one()]) == "1 of 1 hypotheses held"


def test_the_exit_code_is_5_on_a_partial_and_1_when_anything_missed() -> None:
    assert exit_code([held_one()]) == 0
    assert exit_code([held_one(), fault_sources()]) == PARTIAL_EXIT == 5
    assert exit_code([fault_sources(), fault_sources(degraded=0.05)]) == 1


def test_result_json_the_journal_and_the_index_say_partial(tmp_path: Path) -> None:
    result = fault_sources()
    data = to_json(result, samples=False)
    assert (data["held"], data["verdict"]) == (False, "partial (2 of 3 variants ran)")
    assert data["partial"] == "2 of 3 variants ran"
    journal = to_journal(result, 1000.0, 1030.0)
    assert journal["status"] == "failed" and not journal["deviated"]
    [extension] = journal["experiment"]["extensions"]
    assert extension["verdict"] == "partial (2 of 3 variants ran)"
    assert to_journal(held_one(), 1000.0, 1030.0)["status"] == "completed"
    (tmp_path / "fault-sources").mkdir()
    (tmp_path / "fault-sources" / "result.json").write_text(json.dumps(data))
    page = write_index(tmp_path).read_text()
    assert "0 of 1 hypotheses held" in page
    assert 'class="partial">partial (2 of 3 variants ran)' in page
    assert "xds-abort skipped: an xds variant needs .peers/bin/mesh-xds" in page


def test_the_demo_form_leaves_out_the_xds_variants_and_names_them() -> None:
    path, exp = load_experiment("fault-sources", short_sweep=True)
    path2, plain = load_experiment("deadline-budget", short_sweep=True)
    kept, left = without_xds([("fault-sources", path, exp), ("deadline-budget", path2, plain)])
    assert left == ["fault-sources/xds-abort"]
    (_, _, trimmed), (_, _, same) = kept
    assert [v.name for v in trimmed.variants] == ["toxiproxy-latency", "app-fault-abort"]
    assert {e.variant for e in trimmed.expectations} == set(PASSING)
    assert same is plain
    only_xds = exp.model_copy(update={"variants": [v for v in exp.variants if v.xds]})
    kept, left = without_xds([("only-xds", path, only_xds)])
    assert kept == [] and left == ["only-xds (every variant it judges is xds)"]
