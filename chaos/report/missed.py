"""What a hypothesis that did not hold missed, and why, in one line: the verdict screen's "what
it showed" leads with it (it used to print the first metric read, which may have passed:
replica-loss "failed" beside "ejection 0, no-ejection 0", two numbers that held)."""

from __future__ import annotations

from chaos.report.repeat import spreads
from chaos.results import ExperimentResult

SHOWN = 3
"""Misses named in the line; more are counted ("+2 more", each listed under the table)."""


def missed_line(result: ExperimentResult) -> str:
    """`missed: full back_after_s n/a: profile-2 not back after 7.0 s (want <= 5): why` for
    each expectation that failed (in any run, with --repeat), an abort, a variant's error."""
    found = [f"aborted: {result.aborted}"] if result.aborted else []
    found += [f"{v.variant.name} failed: {v.error}" for v in result.variants if v.error]
    if len(result.repeats) > 1:
        found += [
            f"{s.variant} {s.metric} {s.shown()} held {s.held}/{s.runs} (want {s.bound})"
            + (f": {s.why}" if s.why else "")
            for s in spreads(result.repeats)
            if not s.always
        ]
    else:
        found += [
            f"{v.variant} {v.metric} {v.shown} (want {v.bound})"
            + (": the variant met no fault" if v.void else f": {v.why}" if v.why else "")
            for v in result.verdicts
            if not v.passed
        ]
    if not found:
        return ""
    more = f"; +{len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return "missed: " + "; ".join(found[:SHOWN]) + more
