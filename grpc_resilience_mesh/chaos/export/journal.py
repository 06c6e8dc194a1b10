"""A run of `mesh chaos run` as a Chaos Toolkit journal (journal.json beside result.json), so
`chaos report` and CI gates that read journals read our runs too.

The journal's experiment is the whole catalogue experiment, every variant in turn:
- steady_states.before: each variant's steady-state load (its metrics as the output);
- run: each variant's policy, its faults, the load under fault and the recovery load (their
  metrics as the output); a variant that failed or was skipped is a failed activity;
- steady_states.after: each variant's steady state after, then every expectation as a probe
  whose output is the value measured and whose tolerance_met is its verdict;
- rollbacks: the runner's kill switch (every fault removed) and its policy put back.

Every name, title and tag is written inert (grpc_resilience_mesh/chaos/export/inert.py): `chaos
report` turns them into Markdown and HTML.

`deviated` is a missed expectation (steady_states.after not met); `status` is `failed` when
the run was aborted (a steady state that failed, an error) or partial (a variant skipped or in
error: its expectations never judged), else `completed`; the extension carries the verdict
(`held`, `partial (N of M variants ran)`, `did not hold`). The runner keeps
no time per activity: each activity carries the run's start and end, and a load its own
duration.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from typing import Any

from grpc_resilience_mesh.chaos.export.inert import inert
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.run.faults import describe

JournalRun = dict[str, Any]


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


class _Clock:
    """The run's start and end as every activity carries them."""

    def __init__(self, started: float, ended: float) -> None:
        self.start, self.end, self.duration = _iso(started), _iso(ended), ended - started

    def ran(
        self,
        kind: str,
        name: str,
        output: Any,
        ok: bool = True,
        duration: float = 0.0,
        **more: Any,
    ) -> JournalRun:
        activity = {
            "type": kind,
            "name": inert(name),
            "provider": {
                "type": "python",
                "module": "grpc_resilience_mesh.chaos.run.runner",
                "func": "Runner.run",
            },
        }
        return {
            "activity": activity,
            "output": output,
            "status": "succeeded" if ok else "failed",
            "start": self.start,
            "end": self.end,
            "duration": round(duration, 3),
            **more,
        }


def _method(clock: _Clock, v: VariantResult, result: ExperimentResult) -> list[JournalRun]:
    name = v.variant.name
    if v.skipped or (v.error and not v.phases):
        return [clock.ran("action", f"{name}: policy {v.policy}", v.skipped or v.error, False)]
    out = [clock.ran("action", f"{name}: policy {v.policy}", v.policy)]
    out += [
        clock.ran("action", f"{name}: fault on: {describe(f)}", True)
        for f in result.experiment.faults_for(v.variant)
    ]
    for phase_name, phase in v.phases.items():
        out.append(_load(clock, f"{name}: load ({phase_name})", phase))
    if v.error:
        out.append(clock.ran("action", f"{name}: error", v.error, False))
    return out


def _load(clock: _Clock, title: str, phase: PhaseResult) -> JournalRun:
    return clock.ran("probe", title, dict(phase.metrics), duration=phase.load.elapsed_s)


def _steady(clock: _Clock, result: ExperimentResult, which: str) -> list[JournalRun]:
    probes = []
    for v in result.variants:
        metrics = v.steady_before if which == "before" else v.steady_after
        if v.skipped or (which == "after" and not v.phases):
            continue
        met = bool(metrics)
        probes.append(
            clock.ran(
                "probe",
                f"{v.variant.name}: steady-state load ({which})",
                dict(metrics) or v.error,
                met,
                tolerance_met=met,
            )
        )
    return probes


def _expectations(clock: _Clock, result: ExperimentResult) -> list[JournalRun]:
    return [
        clock.ran(
            "probe",
            f"{v.variant}/{v.phase} {v.metric} {v.bound}",
            v.measured,
            v.measured is not None,
            tolerance_met=v.passed,
        )
        for v in result.verdicts
    ]


def to_journal(result: ExperimentResult, started: float, ended: float) -> dict[str, Any]:
    """The journal of `result`, run between the wall-clock times `started` and `ended`."""
    clock = _Clock(started, ended)
    before = _steady(clock, result, "before")
    after = _steady(clock, result, "after") + _expectations(clock, result)
    run = [a for v in result.variants for a in _method(clock, v, result)]
    deviated = any(not v.passed for v in result.verdicts) and not result.aborted
    rollbacks = [
        clock.ran("action", "every fault removed (toxics, proxies, app faults)", True),
        clock.ran("action", "every service back on the policy it ran", True),
    ]
    return {
        "chaoslib-version": None,
        "platform": platform.platform(),
        "node": platform.node(),
        "experiment": {
            "version": "1.0.0",
            "title": inert(f"{result.name}: {result.experiment.title}"),
            "description": inert(result.experiment.hypothesis),
            "tags": ["grpc-resilience-mesh", inert(result.name)],
            "steady-state-hypothesis": {
                "title": "the steady state holds; every expectation is met",
                "probes": [a["activity"] for a in after],
            },
            "method": [a["activity"] for a in run],
            "rollbacks": [a["activity"] for a in rollbacks],
            "extensions": [
                {"name": "grpc-resilience-mesh", "result": "result.json", "verdict": result.verdict}
            ],
        },
        "start": clock.start,
        "end": clock.end,
        "duration": round(clock.duration, 3),
        "status": "failed" if result.aborted or result.partial else "completed",
        "deviated": deviated,
        "steady_states": {
            "before": {
                "steady_state_met": all(p["tolerance_met"] for p in before),
                "probes": before,
            },
            "after": {"steady_state_met": all(p["tolerance_met"] for p in after), "probes": after},
            "during": [],
        },
        "run": run,
        "rollbacks": rollbacks,
    }
