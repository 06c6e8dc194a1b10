"""A topology run's figures (from its call records), its expectations judged, and its report:
reports/<run_id>/result.json (the whole outcome, as data) and report.md (the same, to read)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grpc_resilience_mesh.chaos.topology.experiment_model import Expectation
from grpc_resilience_mesh.chaos.topology.traces import render_traces
from grpc_resilience_mesh.loadgen.percentile import percentile


class Record(Protocol):
    @property
    def latency_s(self) -> float: ...
    @property
    def started_s(self) -> float: ...
    @property
    def code(self) -> str: ...
    @property
    def messages(self) -> int: ...


def figures(records: Sequence[Record]) -> dict[str, float]:
    """requests, ok, errors, error_rate, ok_ratio, p50_s, p99_s, goodput_per_s (OK calls per
    second from the first start to the last end), streamed_messages, code.<NAME> counts."""
    n = len(records)
    codes = Counter(r.code for r in records)
    ok = codes.get("OK", 0)
    latencies = [r.latency_s for r in records]
    span = (
        max(r.started_s + r.latency_s for r in records) - min(r.started_s for r in records)
        if records
        else 0.0
    )
    out: dict[str, float] = {
        "requests": n,
        "ok": ok,
        "errors": n - ok,
        "error_rate": (n - ok) / n if n else 0.0,
        "ok_ratio": ok / n if n else 0.0,
        "p50_s": percentile(latencies, 50),
        "p99_s": percentile(latencies, 99),
        "goodput_per_s": ok / span if span > 0 else 0.0,
        "streamed_messages": sum(r.messages for r in records),
    }
    out.update({f"code.{code}": count for code, count in sorted(codes.items())})
    return out


@dataclass(frozen=True)
class Judged:
    """One expectation and the figure it was judged on."""

    expectation: Expectation
    value: float

    @property
    def held(self) -> bool:
        e = self.expectation
        return (e.max is None or self.value <= e.max) and (e.min is None or self.value >= e.min)

    def to_json(self) -> dict[str, Any]:
        e = self.expectation
        return {
            "metric": e.metric,
            "max": e.max,
            "min": e.min,
            "value": self.value,
            "held": self.held,
            "why": e.why,
        }


def judge(expectations: Sequence[Expectation], figs: dict[str, float]) -> list[Judged]:
    """Each expectation against the figures (a code never seen counts 0)."""
    return [Judged(e, figs.get(e.metric, 0.0)) for e in expectations]


def write_report(run_dir: Path, result: dict[str, Any]) -> Path:
    """result.json and report.md in `run_dir`; the report's path."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    path = run_dir / "report.md"
    path.write_text(render_markdown(result))
    return path


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# {result['title']}",
        "",
        f"- run id: `{result['run_id']}` (W3C baggage `mesh.chaos.run_id` on every call)",
        f"- topology: `{result['topology']}`",
        f"- verdict: **{result['verdict']}** (exit {result['exit_code']})",
    ]
    if result.get("hypothesis"):
        lines += ["", f"> {result['hypothesis']}"]
    if result.get("rollback_s") is not None:
        lines.append(f"- faults removed {result['rollback_s']:.3f} s after the stop")
    lines += [f"- {note}" for note in result.get("notes", [])]
    for phase in ("steady_state", "load"):
        figs = result.get(phase)
        if figs:
            lines += [
                "",
                f"## {phase.replace('_', ' ')}",
                "",
                "| figure | value |",
                "| --- | --- |",
            ]
            lines += [f"| {k} | {v:.4g} |" for k, v in figs.items()]
    if result.get("expectations"):
        lines += ["", "## expectations", "", "| metric | bound | value | held | why |"]
        lines.append("| --- | --- | --- | --- | --- |")
        for e in result["expectations"]:
            bound = " ".join(f"{k} {e[k]:g}" for k in ("min", "max") if e[k] is not None)
            lines.append(
                f"| {e['metric']} | {bound} | {e['value']:.4g} | {e['held']} | {e['why']} |"
            )
    if result.get("traces"):
        lines += render_traces(result["traces"])
    return "\n".join(lines) + "\n"
