"""The traces of a topology run are findable: `mesh chaos run` against a kv service that records
the traceparent and baggage each call arrived with; the report's trace ids are those the
service saw, failed ones among those it failed, each linked to the configured Jaeger UI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.topology.test_topology_run import Case

pytestmark = pytest.mark.e2e

STEADY = 20
JAEGER = "http://jaeger.test:16686"


def test_the_report_names_the_traces_the_service_saw_linked_to_jaeger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_file = tmp_path / "seen.jsonl"
    recorder = ["python", "-m", "tests.e2e.topology.trace_recorder", str(seen_file), str(STEADY)]
    case = Case(tmp_path, command=recorder)
    monkeypatch.setenv("MESH_JAEGER_UI", JAEGER + "/")
    done = case.run()
    result = case.result()
    assert done.returncode == 1, (done.stdout, done.stderr)  # a third of the calls failed
    seen = [json.loads(line) for line in seen_file.read_text().splitlines()]
    assert len(seen) == STEADY + 60
    assert all(f"mesh.chaos.run_id={result['run_id']}" in s["baggage"] for s in seen)
    ids = [s["traceparent"].split("-")[1] for s in seen]
    assert len(set(ids)) == len(ids)  # a fresh trace per call, the steady state's too
    load = list(zip(ids[STEADY:], seen[STEADY:], strict=True))
    failed = {tid for tid, s in load if s["code"] == "UNAVAILABLE"}
    ok = {tid for tid, s in load if s["code"] == "OK"}

    traces = result["traces"]
    assert traces["failed_total"] == len(failed) == result["load"]["code.UNAVAILABLE"] == 20
    assert len(traces["failed"]) == 10 and {e["trace_id"] for e in traces["failed"]} <= failed
    assert traces["ok_total"] == len(ok) == 40
    assert len(traces["ok_sample"]) == 10 and {e["trace_id"] for e in traces["ok_sample"]} <= ok
    assert len(traces["slowest"]) == 10
    assert {e["trace_id"] for e in traces["slowest"]} <= failed | ok
    listed = traces["failed"] + traces["slowest"] + traces["ok_sample"]
    assert all(e["open"] == f"{JAEGER}/trace/{e['trace_id']}" for e in listed)
    assert traces["search"] == f"mesh.chaos.run_id={result['run_id']}"
    report = (tmp_path / "reports" / result["run_id"] / "report.md").read_text()
    first = traces["failed"][0]["trace_id"]
    assert f"[`{first}`]({JAEGER}/trace/{first}) (UNAVAILABLE," in report
    assert case.left_running() == []
