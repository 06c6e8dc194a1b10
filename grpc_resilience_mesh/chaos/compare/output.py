"""A comparison as data (`--json`), as JUnit XML (grpc_resilience_mesh/chaos/report/junit.py) and
as the rows the terminal prints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grpc_resilience_mesh.chaos.compare.decide import (
    ALPHA,
    LATENCY_MIN_FACTOR,
    LATENCY_MIN_STEADY,
    MIN_SHARE_OF_BOUND,
    MIN_SHARE_OF_SLACK,
    Check,
)
from grpc_resilience_mesh.chaos.compare.inputs import Side
from grpc_resilience_mesh.chaos.report.junit import Case, Outcome, Suite
from grpc_resilience_mesh.chaos.report.repeat import spread_text

RULE = (
    f"expectations: exact one-sided Mann-Whitney U on each run's slack to the bound, p <= "
    f"{ALPHA:g}, and a shift of >= max({MIN_SHARE_OF_SLACK:.0%} of the baseline's slack, "
    f"{MIN_SHARE_OF_BOUND:.0%} of the bound) or across it; latencies: 95% bootstrap interval of "
    f"the percentile's difference (in the run's steady-state p50s) excluding 0, >= "
    f"{LATENCY_MIN_STEADY:g} of them, and a factor >= {LATENCY_MIN_FACTOR:g} and >= the machine's "
    "drift between its steady-state checks"
)


def figures(check: Check, side: Sequence[float]) -> str:
    """A side's values as `median [min-max]` for expectations, the percentile for latency."""
    if check.kind == "latency":
        return f"{side[0]:.3g} x steady"
    return f"{spread_text(side)} ({len(side)} runs)" if side else "n/a"


def effect_text(check: Check) -> str:
    if check.effect is None:
        return "n/a"
    unit = " x steady" if check.kind == "latency" else " slack"
    return f"{check.effect:+.4g}{unit}"


def check_json(check: Check) -> dict[str, Any]:
    return {
        "kind": check.kind,
        "variant": check.variant,
        "phase": check.phase,
        "metric": check.metric,
        "bound": check.bound,
        "status": check.status,
        "baseline": list(check.baseline),
        "current": list(check.current),
        "effect": check.effect,
        "test": check.test,
        "why": check.why,
    }


def _side_json(side: Side) -> dict[str, Any]:
    return {"runs": side.runs, "files": [str(p) for p in side.files]}


def comparison_json(baseline: Side, current: Side, checks: Sequence[Check]) -> dict[str, Any]:
    return {
        "experiment": current.experiment,
        "baseline": _side_json(baseline),
        "current": _side_json(current),
        "rule": RULE,
        "regressions": sum(c.status == "REGRESSED" for c in checks),
        "improvements": sum(c.status == "IMPROVED" for c in checks),
        "checks": [check_json(c) for c in checks],
    }


def _case(experiment: str, check: Check) -> Case:
    line = (
        f"{check.status}: baseline {figures(check, check.baseline)}, current "
        f"{figures(check, check.current)}, effect {effect_text(check)}"
    )
    detail = f"{line}\n{check.test}" + (f"\nwhy the bound: {check.why}" if check.why else "")
    outcomes: dict[str, Outcome] = {"REGRESSED": "failed", "NOT COMPARED": "skipped"}
    outcome = outcomes.get(check.status, "passed")
    return Case(
        check.name,
        f"{experiment}.compare.{check.variant}.{check.phase}",
        outcome,
        line if outcome != "passed" else "",
        detail if outcome != "passed" else "",
        properties={"status": check.status, "test": check.test},
    )


def junit_suites(baseline: Side, current: Side, checks: Sequence[Check]) -> list[Suite]:
    """One suite, a case per check; a regression is a failure carrying both sides and the test."""
    props = {
        "baseline": ", ".join(str(p) for p in baseline.files),
        "current": ", ".join(str(p) for p in current.files),
        "rule": RULE,
    }
    name = f"{current.experiment} compare"
    return [Suite(name, [_case(current.experiment, c) for c in checks], properties=props)]
