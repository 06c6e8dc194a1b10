"""A topology run's traces worth opening: which calls are listed (failed, slowest, a sample of
OK ones, each bounded), where each opens (the topology's Jaeger UI, else MESH_JAEGER_UI, else
the run id's tag to search for), and the topology file's `traces:` checked like the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.model import load_topology
from grpc_resilience_mesh.chaos.topology.report import render_markdown
from grpc_resilience_mesh.chaos.topology.traces import jaeger_ui, notable_traces
from grpc_resilience_mesh.loadgen.any_method import CallRecord

TOPOLOGY = """
kind: topology
name: kv
services:
  kv: {{command: [python, -m, examples.kv.server]}}
edges:
  - {{from: client, to: kv}}
{traces}
"""
RUN_ID = "20261205T210000-abcdef"


def topology(tmp_path: Path, traces: str = "") -> Path:
    path = tmp_path / "topology.yaml"
    path.write_text(TOPOLOGY.format(traces=traces))
    return path


def record(index: int, code: str = "OK", latency_s: float = 0.01) -> CallRecord:
    return CallRecord(index, float(index), latency_s, code, 1, "", trace_id=f"{index:032x}")


def test_the_topology_s_jaeger_ui_comes_before_the_environment_s(tmp_path: Path) -> None:
    own = load_topology(topology(tmp_path, "traces: {jaeger_ui: 'http://jaeger.own:16686/'}"))
    plain = load_topology(topology(tmp_path))
    environ = {"MESH_JAEGER_UI": "http://jaeger.env:16686"}
    assert jaeger_ui(own, environ) == "http://jaeger.own:16686"
    assert jaeger_ui(plain, environ) == "http://jaeger.env:16686"
    assert jaeger_ui(plain, {}) is None


@pytest.mark.parametrize(
    ("traces", "said"),
    [
        ("traces: {jaeger_ui: 'jaeger:16686'}", "traces.jaeger_ui"),
        ("traces: {jaeger: 'http://jaeger:16686'}", "traces.jaeger"),
    ],
    ids=["not a URL", "unknown key"],
)
def test_a_bad_traces_section_is_refused_naming_the_field(
    tmp_path: Path, traces: str, said: str
) -> None:
    with pytest.raises(ExperimentError, match=said):
        load_topology(topology(tmp_path, traces))


def test_failed_slowest_and_ok_calls_are_listed_at_most_ten_each() -> None:
    records = [record(i, "UNAVAILABLE" if i % 3 == 0 else "OK", 0.001 * i) for i in range(60)]
    records.append(CallRecord(60, 60.0, 0.0, "CLIENT_DROPPED", 0, "8 calls in flight"))
    traces = notable_traces(records, RUN_ID, None)
    failed = [e["index"] for e in traces["failed"]]
    assert traces["failed_total"] == 20 and len(failed) == 10
    assert failed[0] == 0 and failed[-1] == 57, failed  # spread over the phase
    assert {e["code"] for e in traces["failed"]} == {"UNAVAILABLE"}
    assert [e["index"] for e in traces["slowest"]] == list(range(59, 49, -1))
    assert traces["ok_total"] == 40 and len(traces["ok_sample"]) == 10
    assert {e["code"] for e in traces["ok_sample"]} == {"OK"}
    listed = traces["failed"] + traces["slowest"] + traces["ok_sample"]
    assert all(e["trace_id"] == f"{e['index']:032x}" and e["open"] is None for e in listed)
    assert traces["search"] == f"mesh.chaos.run_id={RUN_ID}"


def test_with_a_jaeger_ui_each_listed_trace_links_to_it_in_both_reports() -> None:
    records = [record(0, "DEADLINE_EXCEEDED", 0.5), record(1)]
    traces = notable_traces(records, RUN_ID, "http://jaeger.test:16686")
    link = f"http://jaeger.test:16686/trace/{0:032x}"
    assert traces["failed"][0]["open"] == link
    result = {
        "title": "t",
        "run_id": RUN_ID,
        "topology": "topology.yaml",
        "verdict": "held",
        "exit_code": 0,
        "traces": traces,
    }
    markdown = render_markdown(result)
    assert f"[`{0:032x}`]({link}) (DEADLINE_EXCEEDED, 0.500 s)" in markdown
    assert f"mesh.chaos.run_id={RUN_ID}" in markdown


def test_without_a_jaeger_ui_the_report_says_what_to_search_for() -> None:
    traces = notable_traces([record(0)], RUN_ID, None)
    result = {"title": "t", "run_id": RUN_ID, "topology": "x", "verdict": "held", "exit_code": 0}
    markdown = render_markdown({**result, "traces": traces})
    assert f"`mesh.chaos.run_id={RUN_ID}`" in markdown and "MESH_JAEGER_UI" in markdown
    assert f"- OK, 1 of 1: `{0:032x}` (OK, 0.010 s)" in markdown
    assert "](" not in markdown
