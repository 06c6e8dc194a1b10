"""What a hypothesis that did not hold missed, and why: each miss as data (the verdict screen's
missed block, grpc_resilience_mesh/cli/chaos_verdict.py) and in one line (the verdict screen's "what
it showed" leads with it; it used to print the first metric read, which may have passed:
replica-loss "failed" beside "ejection 0, no-ejection 0", two numbers that held)."""

from __future__ import annotations

from dataclasses import dataclass

from grpc_resilience_mesh.chaos.report.repeat import spreads
from grpc_resilience_mesh.chaos.results import ExperimentResult

SHOWN = 3
"""Misses named in the line; more are counted ("+2 more", each listed above the table)."""


@dataclass(frozen=True)
class Miss:
    """One thing a run missed: an expectation (its variant and phase, the metric, what was
    measured against the bound, why the bound is what it is), or, with no metric, an abort or
    a variant's error told whole in `measured`."""

    variant: str
    measured: str
    metric: str = ""
    phase: str = ""
    bound: str = ""
    why: str = ""
    void: str = ""
    """Why the expectation tested nothing ("the variant met no fault"), said instead of why."""

    def line(self, why: bool = True) -> str:
        """`full back_after_s n/a: profile-2 not back after 7.0 s (want <= 5): why`."""
        if not self.metric:
            return f"{self.variant} {self.measured}".strip()
        reason = self.void or (self.why if why else "")
        return f"{self.variant} {self.metric} {self.measured} (want {self.bound})" + (
            f": {reason}" if reason else ""
        )


def misses(result: ExperimentResult) -> list[Miss]:
    """An abort, each variant's error, and each expectation that failed (with --repeat: in
    any run, measured as `median [min-max] held H/N`), in the result's order."""
    found = [Miss("", f"aborted: {result.aborted}")] if result.aborted else []
    found += [Miss(v.variant.name, f"failed: {v.error}") for v in result.variants if v.error]
    if len(result.repeats) > 1:
        found += [
            Miss(
                s.variant,
                f"{s.shown()} held {s.held}/{s.runs}" + (f" ({s.void} void)" if s.void else ""),
                s.metric,
                s.phase,
                s.bound,
                s.why,
            )
            for s in spreads(result.repeats)
            if not s.always
        ]
    else:
        found += [
            Miss(
                v.variant,
                v.shown,
                v.metric,
                v.phase,
                v.bound,
                v.why,
                "the variant met no fault" if v.void else "",
            )
            for v in result.verdicts
            if not v.passed
        ]
    return found


def missed_line(result: ExperimentResult, why: bool = True) -> str:
    """`missed: full back_after_s n/a: profile-2 not back after 7.0 s (want <= 5): why; ...`
    for the first SHOWN misses (`why=False`: without the whys, told elsewhere)."""
    found = [m.line(why) for m in misses(result)]
    if not found:
        return ""
    more = f"; +{len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return "missed: " + "; ".join(found[:SHOWN]) + more
