"""`mesh chaos run --junit FILE`: a run's results as JUnit suites (junit.py writes them).

One <testsuite> per experiment, one <testcase> per expectation, classname `experiment.variant`.
A variant that was skipped has its expectations <skipped> with the reason (a CI page counts
them apart from passes); one in error, or never reached after an abort, has them <error>: in
both the expectation was never judged. With `--repeat N` a case fails unless it held in every
run, and says in how many it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from grpc_resilience_mesh.chaos.experiment.model import Expectation
from grpc_resilience_mesh.chaos.report.junit import Case, Outcome, Suite
from grpc_resilience_mesh.chaos.report.repeat import spreads
from grpc_resilience_mesh.chaos.results import ExperimentResult, Verdict


def bound_text(low: float | None, high: float | None) -> str:
    """`>= 0.25 and <= 0.34`, as the verdicts write a bound."""
    parts = [f">= {low:g}" if low is not None else "", f"<= {high:g}" if high is not None else ""]
    return " and ".join(p for p in parts if p)


def case_name(phase: str, metric: str, bound: str) -> str:
    return f"{phase}: {metric} {bound}"


def run_suites(results: Iterable[ExperimentResult]) -> list[Suite]:
    return [experiment_suite(r) for r in results]


def experiment_suite(result: ExperimentResult) -> Suite:
    """The experiment's expectations as cases: judged ones passed or failed, the others
    skipped or in error with the reason their variant did not run."""
    not_run = _not_run(result)
    cases = [_judged(result.name, v) for v in result.verdicts if v.variant not in not_run]
    if len(result.repeats) > 1:
        cases = _repeated(result, not_run)
    for e in result.experiment.expectations:
        if e.variant in not_run:
            cases.append(_unjudged(result.name, e, *not_run[e.variant]))
    properties = {"verdict": result.verdict, "hypothesis": result.experiment.hypothesis}
    return Suite(result.name, cases, result.took_s, properties)


def _not_run(result: ExperimentResult) -> dict[str, tuple[str, str]]:
    """Per variant whose expectations were never judged: (outcome, why)."""
    out = {
        v.variant.name: ("skipped", v.skipped) if v.skipped else ("error", v.error)
        for v in result.variants
        if v.skipped or v.error
    }
    reached = {v.variant.name for v in result.variants}
    for v in result.experiment.variants:
        if v.name not in reached:
            out[v.name] = ("error", f"not run: aborted: {result.aborted}")
    return out


def _judged(experiment: str, v: Verdict) -> Case:
    message = f"{v.metric} = {v.shown} (want {v.bound})"
    if v.void:
        message += ": VOID, the variant met no fault"
    return Case(
        case_name(v.phase, v.metric, v.bound),
        f"{experiment}.{v.variant}",
        "passed" if v.passed else "failed",
        "" if v.passed else message,
        v.why,
        properties=_props(measured=v.measured, bound=v.bound, why=v.why),
    )


def _repeated(result: ExperimentResult, not_run: Mapping[str, object]) -> list[Case]:
    """Each expectation across the runs: failed unless it held in every one."""
    cases = []
    for s in spreads(result.repeats):
        if s.variant in not_run:
            continue
        message = f"{s.metric} = {s.shown()} held {s.held}/{s.runs} (want {s.bound})"
        cases.append(
            Case(
                case_name(s.phase, s.metric, s.bound),
                f"{result.name}.{s.variant}",
                "passed" if s.always else "failed",
                "" if s.always else message,
                s.why,
                properties=_props(measured=s.shown(), bound=s.bound, runs=s.runs, held=s.held),
            )
        )
    return cases


def _unjudged(experiment: str, e: Expectation, outcome: str, why: str) -> Case:
    bound = bound_text(e.min, e.max)
    return Case(
        case_name(e.phase, e.metric, bound),
        f"{experiment}.{e.variant}",
        "skipped" if outcome == "skipped" else "error",
        f"{e.variant} {outcome}: {why}",
        e.why,
        properties=_props(bound=bound, why=e.why),
    )


def _props(**values: Any) -> dict[str, str]:
    return {k: str(v) for k, v in values.items() if v not in (None, "")}


def topology_suite(name: str, result: Mapping[str, Any]) -> Suite:
    """A topology run's result.json (chaos/topology/report.py) as a suite: a case per
    expectation, and one error case when the guard or the lever stopped it (exit 3 or 4)."""
    cases = []
    for e in result.get("expectations", []):
        bound = bound_text(e.get("min"), e.get("max"))
        message = "" if e["held"] else f"{e['metric']} = {e['value']:.4g} (want {bound})"
        outcome: Outcome = "passed" if e["held"] else "failed"
        cases.append(Case(f"{e['metric']} {bound}", name, outcome, message, e.get("why", "")))
    if result.get("exit_code") in (3, 4):
        cases.append(Case("run", name, "error", str(result.get("verdict", ""))))
    return Suite(name, cases, properties={"verdict": str(result.get("verdict", ""))})
