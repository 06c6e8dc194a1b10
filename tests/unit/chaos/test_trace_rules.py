"""Expectations over traces (issue 44 item 4): the `traces:` key of an expectation validated like
the rest of the file, each rule judged on synthetic spans in the services' shape (both
outcomes), and the `traces` check reading span files, measuring and keeping the broken ids for
the report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic import ValidationError

from grpc_resilience_mesh.chaos.experiment.model import Expectation, Experiment
from grpc_resilience_mesh.chaos.registry import CHECKS, CheckContext
from grpc_resilience_mesh.chaos.report.broken_traces import broken_json, render_broken
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.scenarios import span_wait
from grpc_resilience_mesh.chaos.scenarios.trace_check import trace_rules_check
from grpc_resilience_mesh.chaos.scenarios.trace_rules import judge
from grpc_resilience_mesh.client import jaeger_query
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.outcomes import LoadResult, Outcome

MS = 1_000_000
TRACE = "ab" * 16


def _span(
    name: str, span_id: str, parent: str | None, start_ms: float, **extra: Any
) -> dict[str, Any]:
    return {
        "trace_id": TRACE,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "service": "gateway",
        "start_ns": round(start_ms * MS),
        "end_ns": round((start_ms + 1) * MS),
        "attributes": {},
        "events": extra.get("events", []),
    }


def _event(name: str, at_ms: float) -> dict[str, Any]:
    return {"name": name, "time_ns": round(at_ms * MS), "attributes": {}}


def _call(
    attempts: int, first_ms: float = 1.0, events: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A home request: its gateway span, one call to Recommend and its attempts 10 ms apart."""
    spans = [
        _span("Recv.mesh.v1.Gateway.GetHome", "r" * 16, "c" * 16, 0.0),
        _span(
            "Sent.mesh.v1.RecommendationService.Recommend",
            "s" * 16,
            "r" * 16,
            0.5,
            events=events or [],
        ),
    ]
    for i in range(attempts):
        name = "Attempt.mesh.v1.RecommendationService.Recommend"
        spans.append(_span(name, f"{i:016x}", "s" * 16, first_ms + 10 * i))
    return spans


def test_max_attempts_counts_the_attempts_of_each_logical_call() -> None:
    assert judge("max_attempts_per_request", 3, 5.0, _call(3)) is None
    broke = judge("max_attempts_per_request", 3, 5.0, _call(4))
    assert broke == "Sent.mesh.v1.RecommendationService.Recommend made 4 attempts (at most 3)"


def test_a_breaker_event_needs_a_fallback_after_it_in_the_same_trace() -> None:
    opened = _event("breaker opened", 5.0)
    rejected = _event("breaker rejected call", 7.0)
    served = _span(
        "Recv.mesh.v1.Gateway.GetHome", "f" * 16, None, 0.0, events=[_event("fallback served", 9.0)]
    )
    assert (
        judge("breaker_open_then_fallback", None, 5.0, [*_call(1, events=[opened]), served]) is None
    )
    assert judge("breaker_open_then_fallback", None, 5.0, _call(1, events=[opened, rejected])) == (
        "'breaker opened' with no fallback served after it"
    )
    early = _span(
        "Recv.mesh.v1.Gateway.GetHome", "f" * 16, None, 0.0, events=[_event("fallback served", 6.0)]
    )
    assert judge(
        "breaker_open_then_fallback", None, 5.0, [*_call(1, events=[rejected]), early]
    ) == ("'breaker rejected call' with no fallback served after it")
    assert judge("breaker_open_then_fallback", None, 5.0, _call(2)) is None  # no breaker event
    nothing = _event("fallback served", 9.0)
    nothing["attributes"] = {"mesh.served_by": "omitted"}  # the gateway had nothing to serve
    omitted = _span("Recv.mesh.v1.Gateway.GetHome", "f" * 16, None, 0.0, events=[nothing])
    assert judge("breaker_open_then_fallback", None, 5.0, [*_call(1, events=[opened]), omitted])


def test_no_attempt_after_the_deadline_counted_from_the_first_server_span() -> None:
    assert judge("no_attempt_after_deadline", None, 0.025, _call(3)) is None  # last at 21 ms
    broke = judge("no_attempt_after_deadline", None, 0.015, _call(3))
    assert (
        broke == "Attempt.mesh.v1.RecommendationService.Recommend started 6.0 ms after the deadline"
    )


def _expectation(**fields: Any) -> Expectation:
    return Expectation.model_validate({"variant": "full", **fields})


def test_a_traces_expectation_is_a_count_of_broken_traces_bounded_at_zero() -> None:
    e = _expectation(traces={"max_attempts_per_request": 3})
    assert (e.metric, e.max, e.min, e.traces and e.traces.limit) == (
        "traces_broken.max_attempts_per_request",
        0,
        None,
        3,
    )
    flag = _expectation(traces="breaker_open_then_fallback", min=1)
    assert (flag.metric, flag.max, flag.min) == (
        "traces_broken.breaker_open_then_fallback",
        None,
        1,
    )
    assert Expectation.model_validate(e.model_dump()) == e  # the dump reads back


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"traces": "breaker_open_then_fallbak"}, "did you mean 'breaker_open_then_fallback'?"),
        ({"traces": {"max_attempts_per_requests": 3}}, "did you mean 'max_attempts_per_request'?"),
        ({"traces": "max_attempts_per_request"}, "takes a number"),
        ({"traces": {"no_attempt_after_deadline": 2}}, "takes no number"),
        ({"traces": {"max_attempts_per_request": 0}}, "greater than or equal to 1"),
        ({"traces": {"max_attempts_per_request": 10}}, "less than or equal to 9"),
        ({"traces": "no_attempt_after_deadline", "metric": "ok"}, "not both"),
        ({"traces": "no_attempt_after_deadline", "phase": "recovery"}, "fault phase"),
    ],
)
def test_a_bad_traces_key_is_refused_with_the_reason(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said.replace("?", r"\?")):
        _expectation(**fields)


def _experiment(*expectations: dict[str, Any], checks: tuple[str, ...] = ("traces",)) -> Experiment:
    return Experiment.model_validate(
        {
            "title": "t",
            "hypothesis": "h",
            "checks": list(checks),
            "variants": [{"name": "full"}],
            "expectations": list(expectations),
        }
    )


def test_the_traces_check_declares_every_metric_a_rule_reads() -> None:
    from grpc_resilience_mesh.chaos.experiment.loading import problems

    exp = _experiment({"variant": "full", "traces": "no_attempt_after_deadline"}, checks=())
    found = problems(Path("x.yaml"), exp)
    assert any("check traces, which `checks:` does not name" in p for p in found), found
    assert (
        problems(
            Path("x.yaml"), _experiment({"variant": "full", "traces": "no_attempt_after_deadline"})
        )
        == []
    )
    assert "traces_broken.max_attempts_per_request" in CHECKS["traces"].metrics


def _ctx(tmp_path: Path, exp: Experiment, trace_ids: list[str]) -> CheckContext:
    outcomes = [Outcome("home", "OK", 0.01, trace_id=t) for t in trace_ids]
    phase = PhaseResult(LoadResult(outcomes=outcomes), Snapshot(), {})
    target = SimpleNamespace(state_dir=tmp_path)
    return CheckContext(cast(Any, target), exp, exp.variants[0], phase)


def _write(tmp_path: Path, traces: dict[str, list[dict[str, Any]]]) -> None:
    (tmp_path / "traces").mkdir(exist_ok=True)
    lines = [json.dumps({**s, "trace_id": t}) for t, spans in traces.items() for s in spans]
    (tmp_path / "traces" / "gateway.jsonl").write_text("\n".join(lines) + "\n")


def test_the_check_counts_the_traces_that_broke_each_rule_and_keeps_their_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Synthetic attempts with no server span under them, and no writer to add one: no wait.
    monkeypatch.setattr(span_wait, "CLOSE_WAIT_S", 0.0)
    monkeypatch.delenv("MESH_JAEGER_UI", raising=False)
    exp = _experiment(
        {"variant": "full", "traces": {"max_attempts_per_request": 3}},
        {"variant": "full", "traces": "breaker_open_then_fallback"},
    )
    ok, bad = "1" * 32, "2" * 32
    _write(tmp_path, {ok: _call(3), bad: _call(5)})
    ctx = _ctx(tmp_path, exp, [ok, bad])
    metrics = asyncio.run(trace_rules_check(ctx))
    ctx.phase.metrics.update(metrics)  # as the runner does with a check's metrics
    assert metrics == {
        "traces_checked": 2.0,
        "traces_broken.max_attempts_per_request": 1.0,
        "traces_broken.breaker_open_then_fallback": 0.0,
    }
    assert ctx.phase.broken_traces["max_attempts_per_request <= 3"] == [
        (bad, "Sent.mesh.v1.RecommendationService.Recommend made 5 attempts (at most 3)")
    ]
    assert broken_json(ctx.phase)["max_attempts_per_request <= 3"]["checked"] == 2
    result = ExperimentResult("x", Path("x.yaml"), exp)
    result.variants.append(VariantResult(exp.variants[0], "full", phases={"fault": ctx.phase}))
    text = "\n".join(render_broken(result, environ={}))
    assert "full, max_attempts_per_request <= 3: 2 traces, 1 broke it:" in text
    assert f"`{bad}`: Sent.mesh.v1.RecommendationService.Recommend made 5 attempts" in text
    assert "full, breaker_open_then_fallback: 2 traces, 0 broke it" in text


def test_no_trace_found_measures_nothing_so_the_expectation_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MESH_JAEGER_UI", raising=False)
    exp = _experiment({"variant": "full", "traces": "no_attempt_after_deadline"})
    ctx = _ctx(tmp_path, exp, ["3" * 32])
    assert asyncio.run(trace_rules_check(ctx)) == {}
    assert (
        "none of the phase's 1 traces found"
        in ctx.phase.notes["traces_broken.no_attempt_after_deadline"]
    )


def test_without_span_files_the_traces_come_from_jaeger_when_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, str]] = []
    held = {"4" * 32: _call(4)}

    def jaeger_trace(url: str, trace_id: str, timeout_s: float = 5.0) -> list[dict[str, Any]]:
        asked.append((url, trace_id))
        if trace_id not in held:
            raise jaeger_query.JaegerError("no such trace")
        return held[trace_id]

    monkeypatch.setattr(jaeger_query, "jaeger_trace", jaeger_trace)
    monkeypatch.setenv("MESH_JAEGER_UI", "http://127.0.0.1:16686/")
    exp = _experiment({"variant": "full", "traces": {"max_attempts_per_request": 3}})
    ctx = _ctx(tmp_path, exp, ["4" * 32, "5" * 32])  # no traces/ folder in the state dir
    metrics = asyncio.run(trace_rules_check(ctx))
    assert sorted(asked) == [
        ("http://127.0.0.1:16686", "4" * 32),
        ("http://127.0.0.1:16686", "5" * 32),
    ]
    assert metrics == {"traces_checked": 1.0, "traces_broken.max_attempts_per_request": 1.0}
