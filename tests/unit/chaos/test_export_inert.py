"""What Chaos Toolkit's reporting renders from a journal or an exported experiment (the title,
the description, the tags, every activity's name) holds no markup, whatever the experiment's
file, title, hypothesis or policy says, and still reads as written once the entities are
decoded. Rendered by the real `chaos report`: tests/e2e/test_chaostoolkit_report_inert.py."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.export.chaostoolkit import to_chaostoolkit
from grpc_resilience_mesh.chaos.export.inert import inert
from grpc_resilience_mesh.chaos.export.journal import to_journal
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult, Verdict
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult

SCRIPT = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(2)) <javascript:alert(3)>"
ATTRIBUTES = "{onmouseover=alert(4)} `<b>`{=html} \\input{/etc/passwd}"
HOSTILE_NAME = "<svg onload=alert(5)>"
MARKUP = re.compile(r"<[A-Za-z/!?]|[][{}\\]|\n")


def hostile_result() -> ExperimentResult:
    path, exp = load_experiment("provider-outage")
    exp = exp.model_copy(update={"title": SCRIPT, "hypothesis": f"{LINK}\n\n{ATTRIBUTES}"})
    full = next(v for v in exp.variants if v.name == "full")
    variant = VariantResult(full, f"{SCRIPT}.yaml", steady_before={"ok": 50.0})
    variant.phases["fault"] = PhaseResult(LoadResult(), Snapshot(), {"ok": 100.0})
    variant.steady_after = {"ok": 50.0}
    verdicts = [Verdict("full", "fault", "ok", 100.0, ">= 100", True)]
    return ExperimentResult(HOSTILE_NAME, path, exp, [variant], verdicts)


def rendered_text(doc: dict[str, Any]) -> Iterator[str]:
    """Every string chaosreport's template puts into Markdown outside a code block."""
    experiment = doc.get("experiment", doc)
    yield experiment["title"]
    yield experiment["description"]
    yield from experiment["tags"]
    hypothesis = experiment["steady-state-hypothesis"]
    yield hypothesis["title"]
    activities = [*hypothesis["probes"], *experiment["method"], *experiment["rollbacks"]]
    activities += experiment.get("controls", [])
    activities += [run["activity"] for run in doc.get("run", [])]
    for which in ("before", "after"):
        activities += [
            p["activity"] for p in doc.get("steady_states", {}).get(which, {}).get("probes", [])
        ]
    yield from (a["name"] for a in activities)


def test_the_journal_of_a_hostile_experiment_holds_no_markup_and_reads_as_written() -> None:
    journal = to_journal(hostile_result(), 1000.0, 1030.0)
    texts = list(rendered_text(journal))
    assert len(texts) > 10
    assert [t for t in texts if MARKUP.search(t)] == []
    assert html.unescape(journal["experiment"]["title"]) == f"{HOSTILE_NAME}: {SCRIPT}"
    assert html.unescape(journal["experiment"]["description"]) == f"{LINK} {ATTRIBUTES}"
    assert HOSTILE_NAME in [html.unescape(t) for t in journal["experiment"]["tags"]]
    names = [html.unescape(r["activity"]["name"]) for r in journal["run"]]
    assert f"full: policy {SCRIPT}.yaml" in names


def test_an_exported_hostile_experiment_holds_no_markup_and_reads_as_written() -> None:
    result = hostile_result()
    full = result.variants[0].variant
    doc = to_chaostoolkit(result.path, HOSTILE_NAME, result.experiment, full)
    assert [t for t in rendered_text(doc) if MARKUP.search(t)] == []
    assert html.unescape(doc["title"]) == f"{HOSTILE_NAME} (full): {SCRIPT}"
    assert html.unescape(doc["description"]) == f"{LINK} {ATTRIBUTES}"
    assert doc["configuration"]["mesh_experiment"] == HOSTILE_NAME  # read by code, not shown


def test_text_that_starts_no_markup_is_kept_as_it_is() -> None:
    kept = "full/fault p99_ms <= 300 and error_rate >= 0.5 on gateway->payment: A & B, 1 < 2"
    assert inert(kept) == kept
