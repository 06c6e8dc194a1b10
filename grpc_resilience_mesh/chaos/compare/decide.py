"""The decision: each expectation and each headline latency IMPROVED, REGRESSED or WITHIN NOISE.

An expectation is judged on its slack, the distance from the measured value to the nearest bound
it must respect (value - min for a min, max - value for a max, the smaller of the two for a
range): more slack is better whichever way the bound points, so the expectation gives the
direction. A change counts when it is both

- significant: the exact one-sided Mann-Whitney U p-value (grpc_resilience_mesh/chaos/compare/
  stats.py) is at most ALPHA, and
- relevant: the median slack moved by at least the larger of MIN_SHARE_OF_SLACK of the
  baseline's slack (a shift that eats a quarter of the room the baseline left before its bound)
  and MIN_SHARE_OF_BOUND of the bound (a floor where the baseline sits on its bound), or the
  median crossed the bound (held -> missed is relevant however small).

Three runs that separate completely by chance do so with p = 0.05 each way; the relevance floor
is what keeps the run-to-run drift of a loaded machine from alarming (docs/chaos-compare.md
gives the measured false-alarm and miss counts).

A headline latency (p50 and p95 of each variant's phase, OK requests: the catalogue's reference
figures) is judged on per-request samples, each divided by its run's steady-state p50 (measured
by the same run, nearest the phase: grpc_resilience_mesh/chaos/compare/inputs.py steady_p50), so
that a machine busier in one run than the other does not read as a regression: a 95 % bootstrap
interval of the percentile's difference that excludes 0, a difference of at least
LATENCY_MIN_STEADY steady-state medians (what a policy adds to a request is a hop, an attempt or
a hang: each at least about one healthy request's median, so half of one is the least worth
naming), and a change by a factor larger than both LATENCY_MIN_FACTOR and the machine's drift:
the most either side's runs saw their two steady-state p50s (the same healthy load, before and
after the faults) differ (inputs.py machine_drift; up to 3.1x within one run on the shared
2-core machine). The bootstrap sees
requests, not runs; the drift is the run-to-run noise it cannot see, measured by each run on
itself, so a loaded machine widens the floor of its own comparison.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Literal

from grpc_resilience_mesh.chaos.compare.inputs import Side
from grpc_resilience_mesh.chaos.compare.stats import (
    bootstrap_percentile,
    hodges_lehmann,
    mann_whitney,
)

Status = Literal["IMPROVED", "REGRESSED", "WITHIN NOISE", "NOT COMPARED"]

ALPHA = 0.05
MIN_SHARE_OF_SLACK = 0.25
MIN_SHARE_OF_BOUND = 0.05
LATENCY_MIN_FACTOR = 1.5
LATENCY_MIN_STEADY = 0.5
LATENCY_PERCENTILES = (50.0, 95.0)

_BOUND = re.compile(r"(>=|<=)\s*(-?[0-9.eE+-]+)")


@dataclass(frozen=True)
class Check:
    """One comparison: what it is, both sides' figures, the effect and the test's figures."""

    kind: Literal["expectation", "latency"]
    variant: str
    phase: str
    metric: str
    bound: str
    status: Status
    baseline: tuple[float, ...]
    current: tuple[float, ...]
    effect: float | None
    """Expectations: the change of the median slack (negative: closer to the bound); latency:
    current - baseline of the percentile, in steady-state medians."""
    test: str
    why: str = ""

    @property
    def name(self) -> str:
        return f"{self.variant} {self.phase} {self.metric} {self.bound}".strip()


def parse_bound(bound: str) -> tuple[float | None, float | None]:
    """(min, max) from a verdict's bound text: `>= 10 and <= 14`, `<= 15`, `>= 100`."""
    low = high = None
    for op, number in _BOUND.findall(bound):
        if op == ">=":
            low = float(number)
        else:
            high = float(number)
    if low is None and high is None:
        raise ValueError(f"no bound in {bound!r}")
    return low, high


def slack(value: float, low: float | None, high: float | None) -> float:
    """The room left before the nearest bound; negative outside it."""
    room = [value - low] if low is not None else []
    room += [high - value] if high is not None else []
    return min(room)


def _min_effect(base_slack: float, low: float | None, high: float | None) -> float:
    scale = max(abs(b) for b in (low, high) if b is not None)
    return max(MIN_SHARE_OF_SLACK * abs(base_slack), MIN_SHARE_OF_BOUND * scale, 1e-9)


def judge_expectation(
    key: tuple[str, str, str, str], baseline: list[float], current: list[float], why: str
) -> Check:
    """One expectation's slack across the runs, by Mann-Whitney U and the relevance floor."""
    variant, phase, metric, bound = key
    if len(baseline) < 2 or len(current) < 2:
        return Check(
            "expectation", variant, phase, metric, bound, "NOT COMPARED",
            tuple(baseline), tuple(current), None,
            f"needs 2 measured runs a side (baseline {len(baseline)}, current {len(current)})", why,
        )  # fmt: skip
    low, high = parse_bound(bound)
    base = [slack(v, low, high) for v in baseline]
    cur = [slack(v, low, high) for v in current]
    result = mann_whitney(base, cur)
    b_med, c_med = statistics.median(base), statistics.median(cur)
    shift = c_med - b_med
    crossed = (b_med >= 0) != (c_med >= 0)
    relevant = crossed or abs(shift) >= _min_effect(b_med, low, high)
    status: Status = "WITHIN NOISE"
    if relevant and shift < 0 and result.p_lower <= ALPHA:
        status = "REGRESSED"
    elif relevant and shift > 0 and result.p_higher <= ALPHA:
        status = "IMPROVED"
    p = result.p_lower if shift < 0 else result.p_higher
    hl = hodges_lehmann(base, cur)
    test = (
        f"Mann-Whitney U={result.u:g}, one-sided p={p:.3g} "
        f"({'exact' if result.exact else 'sampled'}, {result.splits} splits); "
        f"Hodges-Lehmann {hl:+.4g}"
    )
    return Check(
        "expectation", variant, phase, metric, bound, status,
        tuple(baseline), tuple(current), shift, test, why,
    )  # fmt: skip


def judge_latency(
    variant: str,
    phase: str,
    q: float,
    samples: tuple[list[float], list[float]],
    drift: float = 1.0,
) -> Check:
    """One percentile of OK requests' latency (over the steady-state p50), by bootstrap interval
    and a change by a factor beyond LATENCY_MIN_FACTOR and the machine's `drift`."""
    baseline, current = samples
    metric = f"p{q:g}/steady"
    interval = bootstrap_percentile(baseline, current, q)
    diff = interval.difference
    floor = max(LATENCY_MIN_FACTOR, drift)
    low, high = sorted((interval.baseline, interval.current))
    relevant = low > 0 and high / low >= floor and abs(diff) >= LATENCY_MIN_STEADY
    status: Status = "WITHIN NOISE"
    if interval.excludes_zero and relevant:
        status = "REGRESSED" if diff > 0 else "IMPROVED"
    test = (
        f"bootstrap 95% CI [{interval.low:+.4g}, {interval.high:+.4g}] "
        f"({len(baseline)} vs {len(current)} requests); minimum factor {floor:.3g}"
        f" (machine drift {drift:.3g}x)"
    )
    return Check(
        "latency", variant, phase, metric, "lower is better", status,
        (interval.baseline,), (interval.current,), diff, test,
    )  # fmt: skip


def compare(baseline: Side, current: Side) -> list[Check]:
    """Every expectation either side measured, then each shared phase's headline latencies."""
    checks = []
    for key in dict.fromkeys([*baseline.values, *current.values]):
        why = current.why.get(key) or baseline.why.get(key, "")
        checks.append(
            judge_expectation(key, baseline.values.get(key, []), current.values.get(key, []), why)
        )
    for variant, phase in baseline.latencies:
        base, cur = baseline.latencies[(variant, phase)], current.latencies.get((variant, phase))
        drift = max(baseline.drift.get(variant, 1.0), current.drift.get(variant, 1.0))
        for q in LATENCY_PERCENTILES if base and cur else ():
            checks.append(judge_latency(variant, phase, q, (base, cur or []), drift))
    return checks
