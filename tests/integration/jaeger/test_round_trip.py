"""Spans from `mesh call home` reach the real Jaeger over OTLP, and Jaeger gives back, through
its own query API, the tree the project promises: A72 names, a parent link across every hop,
the services, and the decision events, exactly as the services' own JSONL copy holds them.
`mesh traces --jaeger` then draws the same waterfall from Jaeger's copy as from the files."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client import jaeger_query as jq
from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.services.telemetry.tracing import MeshTracing
from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import (
    JsonLinesSpanExporter,
    JsonLinesSpanProcessor,
)
from tests.integration.jaeger.jaeger_process import Jaeger
from tests.integration.telemetry.inproc_mesh import in_process_mesh
from tests.support.polling import wait_until

A72 = re.compile(r"(Recv|Sent|Attempt)\.mesh\.v1\.\w+\.\w+")
SERVICES = {"gateway", "recommendation", "profile"}


@dataclass(frozen=True)
class RoundTrip:
    retried: str
    """Trace id of a call whose recommendation answered on the third attempt."""
    degraded: str
    """Trace id of a call whose recommendation kept failing: breaker opened, fallback served."""
    jsonl_dir: Path
    local: dict[str, list[tr.Span]]
    """The services' own JSONL copy, by trace id."""


def _tee_jsonl(traces_dir: Path) -> Any:
    """MeshTracing.from_env, plus the project's JSONL processor beside the OTLP one, so both
    copies are made from the same spans (the services pick one exporter; this test wants two)."""
    original = MeshTracing.from_env

    def from_env(name: str, environ: Any) -> MeshTracing | None:
        tracing = original(name, environ)
        if tracing is not None:
            exporter = JsonLinesSpanExporter(traces_dir / f"{name}.jsonl")
            tracing.provider.add_span_processor(JsonLinesSpanProcessor(exporter, delay_s=0.05))
        return tracing

    return from_env


_CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("MESH_API_KEY", "MESH_GATEWAY")}


def _mesh_call_home(gateway: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "grpc_resilience_mesh.cli", "call", "home", "--user", "u-0001",
         "--limit", "3", "--addr", gateway, "--timeout", "5", "--json", "-"],
        capture_output=True, text=True, timeout=60, check=False, cwd=cwd,
        env={**_CLEAN_ENV, "MESH_STATE_DIR": str(cwd)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


async def _scenario(jaeger: Jaeger, traces_dir: Path) -> tuple[str, str]:
    # Threshold 3: the first call's two failures (then a success) leave the breaker closed; the
    # second call's three failures open it.
    breaker = {"MESH_POLICY__GATEWAY_TO_RECOMMENDATION__BREAKER__CONSECUTIVE_FAILURES": "3"}
    async with in_process_mesh(f"http://{jaeger.otlp_grpc}", 2, breaker) as mesh:
        first = await asyncio.to_thread(_mesh_call_home, mesh.gateway, traces_dir)
        assert mesh.recommendations is not None
        mesh.recommendations.fail_first = 10**6
        second = await asyncio.to_thread(_mesh_call_home, mesh.gateway, traces_dir)
    assert not first.get("degraded") and first["recommendations"], first
    assert [d["part"] for d in second["degraded"]] == ["recommendations"], second
    return str(first["trace_id"]), str(second["trace_id"])


@pytest.fixture(scope="module")
def round_trip(jaeger: Jaeger, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundTrip]:
    traces_dir = tmp_path_factory.mktemp("jsonl")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MeshTracing, "from_env", _tee_jsonl(traces_dir))
        retried, degraded = asyncio.run(_scenario(jaeger, traces_dir))
    local = tr.group_traces(tr.load_spans(tr.trace_files(traces_dir)))
    yield RoundTrip(retried, degraded, traces_dir, local)


def _from_jaeger(jaeger: Jaeger, trace_id: str, expected: int) -> list[tr.Span]:
    """Jaeger's copy once every span has landed (its batch processor and storage lag a little)."""

    def landed() -> list[tr.Span]:
        try:
            spans = jq.jaeger_trace(jaeger.query_url, trace_id)
        except jq.JaegerError:
            return []
        return spans if len(spans) >= expected else []

    return wait_until(landed, timeout_s=20, what=f"{expected} spans of {trace_id} in Jaeger")


def _by_id(spans: list[tr.Span]) -> dict[str, tr.Span]:
    return {s["span_id"]: s for s in spans}


def _comparable(span: tr.Span) -> tr.Span:
    """The span with its events in (time, name) order: Jaeger answers them sorted by name, the
    services write them as they happen; two in the same nanosecond have no order of their own."""
    return {**span, "events": sorted(span["events"], key=lambda e: (e["time_ns"], e["name"]))}


@pytest.mark.parametrize("which", ["retried", "degraded"])
def test_jaeger_holds_the_same_spans_as_the_jsonl(
    jaeger: Jaeger, round_trip: RoundTrip, which: str
) -> None:
    trace_id = getattr(round_trip, which)
    local = _by_id(round_trip.local[trace_id])
    held = _by_id(_from_jaeger(jaeger, trace_id, len(local)))
    assert held.keys() == local.keys()
    for span_id, mine in local.items():
        assert _comparable(held[span_id]) == _comparable(mine), (
            f"{mine['name']} ({mine['service']})"
        )


@pytest.mark.parametrize("which", ["retried", "degraded"])
def test_the_tree_in_jaeger_is_the_promised_one(
    jaeger: Jaeger, round_trip: RoundTrip, which: str
) -> None:
    trace_id = getattr(round_trip, which)
    spans = _from_jaeger(jaeger, trace_id, len(round_trip.local[trace_id]))
    by_id = _by_id(spans)
    assert all(A72.fullmatch(s["name"]) for s in spans), [s["name"] for s in spans]
    (root,) = [s for s in spans if s["parent_span_id"] not in by_id]
    # The root's parent is the span of `mesh call` itself, whose traceparent went on the wire.
    assert (root["name"], root["service"], root["kind"]) == (
        "Recv.mesh.v1.Gateway.GetHome", "gateway", "SERVER"
    )  # fmt: skip
    assert root["parent_span_id"] is not None
    for span in spans:
        if span is root:
            continue
        parent = by_id[span["parent_span_id"]]
        kind, _, rpc = span["name"].partition(".")
        want = {"Sent": ("Recv", "INTERNAL"), "Attempt": ("Sent", "CLIENT")}.get(kind)
        if want is None:  # a Recv hangs under the caller's Attempt of the same RPC, one hop up
            assert parent["name"] == f"Attempt.{rpc}" and span["kind"] == "SERVER"
            assert parent["service"] != span["service"]
        else:
            assert parent["name"].split(".", 1) == [want[0], parent["name"].split(".", 1)[1]]
            assert span["kind"] == want[1] and parent["service"] == span["service"]
    assert {s["service"] for s in spans} == SERVICES


def _events(spans: list[tr.Span], name: str) -> list[tuple[str, list[str]]]:
    return [(s["name"], [e["name"] for e in s["events"]]) for s in spans if s["name"] == name]


def test_decision_events_are_in_jaeger(jaeger: Jaeger, round_trip: RoundTrip) -> None:
    sent = "Sent.mesh.v1.RecommendationService.Recommend"
    retried = _from_jaeger(jaeger, round_trip.retried, len(round_trip.local[round_trip.retried]))
    assert _events(retried, sent) == [(sent, ["retry scheduled", "retry scheduled"])]
    attempts = [s for s in retried if s["name"] == sent.replace("Sent.", "Attempt.")]
    assert sorted(a["attributes"]["mesh.attempt"] for a in attempts) == [1, 2, 3]

    degraded = _from_jaeger(jaeger, round_trip.degraded, len(round_trip.local[round_trip.degraded]))
    (call,) = [s for s in degraded if s["name"] == sent]
    assert [e["name"] for e in call["events"]] == [
        "retry scheduled",
        "retry scheduled",
        "breaker opened",
        "retry skipped",
    ]
    assert call["events"][-1]["attributes"]["mesh.reason"] == "attempts"
    assert call["status"]["code"] == "ERROR"
    (root,) = [s for s in degraded if s["name"] == "Recv.mesh.v1.Gateway.GetHome"]
    (fallback,) = [e for e in root["events"] if e["name"] == "fallback served"]
    assert fallback["attributes"]["mesh.code"] == "UNAVAILABLE"
    assert root["attributes"]["mesh.degraded"] is True
    assert root["attributes"]["mesh.degraded_parts"] == ["recommendation"]


@pytest.mark.parametrize("which", ["retried", "degraded"])
def test_mesh_traces_draws_the_same_waterfall_from_jaeger(
    jaeger: Jaeger, round_trip: RoundTrip, which: str
) -> None:
    trace_id = getattr(round_trip, which)
    _from_jaeger(jaeger, trace_id, len(round_trip.local[trace_id]))
    cols = {"COLUMNS": "160"}
    from_files = CliRunner().invoke(
        app, ["traces", trace_id, "--dir", str(round_trip.jsonl_dir)], env=cols
    )
    from_jaeger = CliRunner().invoke(
        app, ["traces", trace_id, "--jaeger", jaeger.query_url], env=cols
    )
    assert from_files.exit_code == 0 and from_jaeger.exit_code == 0, from_jaeger.output
    assert from_jaeger.output == from_files.output
    assert "Attempt.mesh.v1.RecommendationService.Recommend" in from_jaeger.output


def test_mesh_traces_lists_the_gateways_traces_from_jaeger(
    jaeger: Jaeger, round_trip: RoundTrip
) -> None:
    for trace_id in (round_trip.retried, round_trip.degraded):
        _from_jaeger(jaeger, trace_id, len(round_trip.local[trace_id]))
    listed = CliRunner().invoke(
        app, ["traces", "--jaeger", jaeger.query_url], env={"COLUMNS": "160"}
    )
    assert listed.exit_code == 0, listed.output
    assert round_trip.retried in listed.output and round_trip.degraded in listed.output
    assert "OK, degraded" in listed.output
    by_prefix = CliRunner().invoke(
        app,
        ["traces", round_trip.degraded[:12], "--jaeger", jaeger.query_url],
        env={"COLUMNS": "160"},
    )
    assert by_prefix.exit_code == 0 and f"trace {round_trip.degraded}" in by_prefix.output


def test_mesh_traces_says_in_one_line_what_jaeger_cannot_give(jaeger: Jaeger) -> None:
    absent = CliRunner().invoke(app, ["traces", "0" * 31 + "1", "--jaeger", jaeger.query_url])
    assert absent.exit_code == 2
    assert absent.output.strip().splitlines() == [
        f"error: no trace {'0' * 31}1 in Jaeger at {jaeger.query_url}"
    ]
    closed = f"http://127.0.0.1:{free_port()}"
    down = CliRunner().invoke(app, ["traces", "--jaeger", closed])
    assert down.exit_code == 2
    (line,) = down.output.strip().splitlines()
    assert line.startswith(f"error: cannot reach Jaeger at {closed}/api/v3/traces?")
