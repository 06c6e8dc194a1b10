"""The two tests `mesh chaos compare` decides by, in plain Python (the mesh has no numpy).

Mann-Whitney U on the runs' values, exact: every way of splitting the pooled values into groups
of the two sizes is enumerated (C(6, 3) = 20 for 3 runs against 3), so its p-value is what the
data allow and no normal approximation pretends otherwise at n = 3; above EXACT_LIMIT splits a
seeded Monte Carlo sample of them stands in. Ties take mid-ranks. With 3 runs a side the smallest
one-sided p is 1/20 = 0.05: three runs can show a change only when they separate completely.

A percentile's difference on per-request samples: a seeded percentile bootstrap of
current - baseline, each side resampled on its own.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

EXACT_LIMIT = 20_000
"""Splits enumerated exactly; above it (e.g. 8 runs against 8: 12,870 splits; 10 against 10:
184,756) the p-value comes from this many random splits (its standard error <= 0.0036)."""
BOOTSTRAP_ROUNDS = 2_000
SEED = 44
"""A fixed seed: the same two files always give the same verdict."""


@dataclass(frozen=True)
class RankTest:
    """Mann-Whitney U of `current` against `baseline`: p_higher is the one-sided p-value of
    "current tends higher", p_lower of "current tends lower"; splits counts the permutations."""

    u: float
    p_higher: float
    p_lower: float
    splits: int
    exact: bool


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval of current - baseline for one percentile (ms)."""

    baseline: float
    current: float
    low: float
    high: float

    @property
    def difference(self) -> float:
        return self.current - self.baseline

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def mid_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, tied values sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _rank_sums(ranks: list[float], m: int) -> tuple[list[float], bool]:
    """The current group's rank sum under every split (or EXACT_LIMIT random ones)."""
    if math.comb(len(ranks), m) <= EXACT_LIMIT:
        splits = itertools.combinations(range(len(ranks)), m)
        return [sum(ranks[i] for i in pick) for pick in splits], True
    rng = random.Random(SEED)
    return [sum(rng.sample(ranks, m)) for _ in range(EXACT_LIMIT)], False


def mann_whitney(baseline: Sequence[float], current: Sequence[float]) -> RankTest:
    """The exact (or sampled) permutation distribution of U; both one-sided p-values."""
    if not baseline or not current:
        raise ValueError("both groups need at least one value")
    m = len(current)
    ranks = mid_ranks([*baseline, *current])
    observed = sum(ranks[len(baseline) :])
    sums, exact = _rank_sums(ranks, m)
    eps = 1e-9
    higher = sum(s >= observed - eps for s in sums) / len(sums)
    lower = sum(s <= observed + eps for s in sums) / len(sums)
    return RankTest(observed - m * (m + 1) / 2, higher, lower, len(sums), exact)


def hodges_lehmann(baseline: Sequence[float], current: Sequence[float]) -> float:
    """The shift Mann-Whitney estimates: the median of every current - baseline difference."""
    return statistics.median(c - b for c in current for b in baseline)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted values, linearly interpolated between ranks."""
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def bootstrap_percentile(
    baseline: Sequence[float], current: Sequence[float], q: float, confidence: float = 0.95
) -> Interval:
    """A percentile bootstrap interval of percentile_q(current) - percentile_q(baseline)."""
    rng = random.Random(SEED)
    diffs = []
    for _ in range(BOOTSTRAP_ROUNDS):
        b = sorted(rng.choices(baseline, k=len(baseline)))
        c = sorted(rng.choices(current, k=len(current)))
        diffs.append(percentile(c, q) - percentile(b, q))
    diffs.sort()
    tail = (1 - confidence) / 2 * 100
    return Interval(
        percentile(sorted(baseline), q),
        percentile(sorted(current), q),
        percentile(diffs, tail),
        percentile(diffs, 100 - tail),
    )
