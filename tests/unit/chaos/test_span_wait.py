"""The trace checks read the span files once the spans they judge are written (issue 46 item 2):
a server span written late is waited for, a trace that is whole is judged at once, and an attempt
that failed before any server saw it is not waited for past a span writer's delay. Time is a
fake clock that moves only when a check sleeps; a fake span writer writes on that clock."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.chaos.results import PhaseResult
from grpc_resilience_mesh.chaos.scenarios import fault_trace as fault_trace_module
from grpc_resilience_mesh.chaos.scenarios import span_wait
from grpc_resilience_mesh.chaos.scenarios.fault_trace import fault_trace
from grpc_resilience_mesh.chaos.scenarios.span_wait import UNSEEN_AFTER_S, missing
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.outcomes import LoadResult, Outcome

MS = 1_000_000
TRACE = "cd" * 16
ATTEMPT = "Attempt.mesh.v1.RecommendationService.Recommend"
SERVER = "Recv.mesh.v1.RecommendationService.Recommend"


def _span(name: str, span_id: str, parent: str | None, start_ms: float, end_ms: float,
          failed: bool = False) -> dict[str, Any]:  # fmt: skip
    return {"trace_id": TRACE, "span_id": span_id, "parent_span_id": parent, "name": name,
            "start_ns": round(start_ms * MS), "end_ns": round(end_ms * MS),
            "status": {"code": "ERROR" if failed else "UNSET"}, "events": []}  # fmt: skip


def _gateway(failed: bool = False, end_ms: float = 120.0) -> list[dict[str, Any]]:
    """A home request's spans in the gateway's file: its server span, the call, one attempt."""
    return [
        _span("Recv.mesh.v1.Gateway.GetHome", "r" * 16, "c" * 16, 0, end_ms + 1),
        _span("Sent.mesh.v1.RecommendationService.Recommend", "s" * 16, "r" * 16, 1, end_ms),
        _span(ATTEMPT, "a" * 16, "s" * 16, 2, end_ms, failed=failed),
    ]


SERVED = _span(SERVER, "b" * 16, "a" * 16, 102, 110)
"""recommendation's span of the attempt: it started 100 ms after the attempt did."""


class FakeTime:
    """monotonic(), time_ns() and sleep() on one fake clock; `writes`: (at_s, file, spans)
    a fake span writer appends once the clock reaches at_s."""

    def __init__(self, folder: Path, writes: list[tuple[float, str, list[dict[str, Any]]]]):
        self.now_s = 0.0
        self.folder = folder
        self.writes = sorted(writes, key=lambda w: w[0])
        self.wall_ns = 10**18
        self._write_due()

    def monotonic(self) -> float:
        return self.now_s

    def time_ns(self) -> int:
        return self.wall_ns + round(self.now_s * 1e9)

    async def sleep(self, seconds: float) -> None:
        self.now_s += seconds
        self._write_due()

    def _write_due(self) -> None:
        while self.writes and self.writes[0][0] <= self.now_s:
            _, name, spans = self.writes.pop(0)
            with (self.folder / name).open("a") as out:
                out.writelines(json.dumps(s) + "\n" for s in spans)


def _fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, writes: list[Any]) -> FakeTime:
    (tmp_path / "traces").mkdir()
    fake = FakeTime(tmp_path / "traces", writes)
    faked_asyncio = SimpleNamespace(sleep=fake.sleep, to_thread=asyncio.to_thread)
    for module in (span_wait, fault_trace_module):  # the time the check reads, and sleeps on
        monkeypatch.setattr(module, "time", fake, raising=False)
        monkeypatch.setattr(module, "asyncio", faked_asyncio, raising=False)
    return fake


def _ctx(tmp_path: Path) -> CheckContext:
    exp = Experiment.model_validate(
        {
            "title": "t",
            "hypothesis": "h",
            "checks": ["fault_trace"],
            "variants": [{"name": "v"}],
            "dependency_method": "Recommend",
        }
    )
    outcomes = [Outcome("home", "OK", 0.1, trace_id=TRACE)]
    phase = PhaseResult(LoadResult(outcomes=outcomes), Snapshot(), {})
    return CheckContext(cast(Any, SimpleNamespace(state_dir=tmp_path)), exp, exp.variants[0], phase)


def test_a_server_span_written_late_is_waited_for_and_read_as_soon_as_it_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """recommendation's writer lands its span 1.5 s after the gateway's: past the 1.1 s a fixed
    wait gave it (which judged the attempt unserved), within what this wait allows."""
    fake = _fake(monkeypatch, tmp_path, [(0.0, "gateway.jsonl", _gateway()),
                                         (1.5, "recommendation.jsonl", [SERVED])])  # fmt: skip
    got = asyncio.run(fault_trace(_ctx(tmp_path)))
    assert got["trace_attempts"] == 1 and got["trace_lead_ms_p50"] == 100.0
    assert 1.5 <= fake.now_s <= 1.5 + span_wait.POLL_S + 1e-9  # the next poll after it landed


def test_a_whole_trace_is_judged_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake(monkeypatch, tmp_path, [(0.0, "gateway.jsonl", _gateway()),
                                         (0.0, "recommendation.jsonl", [SERVED])])  # fmt: skip
    got = asyncio.run(fault_trace(_ctx(tmp_path)))
    assert got["trace_lead_ms_p50"] == 100.0
    assert fake.now_s == 0.0  # no sleep: every span the check reads was there at the first read


def test_an_attempt_that_failed_before_any_server_waits_a_writers_delay_from_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An abort before the call left the gateway has no server span: once a writer's delay has
    passed since the attempt ended, its absence is the answer, not a span still queued."""
    fake = _fake(monkeypatch, tmp_path, [])
    ended_ms = fake.time_ns() / MS  # the attempt ended as the check began
    (tmp_path / "traces" / "gateway.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in _gateway(failed=True, end_ms=ended_ms))
    )
    got = asyncio.run(fault_trace(_ctx(tmp_path)))
    assert got["trace_failed_unserved"] == 1.0
    assert UNSEEN_AFTER_S - 1e-6 <= fake.now_s <= UNSEEN_AFTER_S + span_wait.POLL_S + 1e-6


def test_what_a_trace_still_misses() -> None:
    now_ns = 10**18
    answered = _gateway()
    assert missing(answered, now_ns) == f"the server span under {ATTEMPT}"
    assert missing([*answered, SERVED], now_ns) is None
    downstream_only = [*answered[1:], SERVED]  # the gateway's own server span not written yet
    assert missing(downstream_only, now_ns) is not None
    failed_long_ago = _gateway(failed=True)  # ended at 120 ms of the epoch
    assert missing(failed_long_ago, now_ns) is None
