"""`mesh chaos compare`'s decision on synthetic samples: the exact rank test's p-values, and
each expectation or latency judged WITHIN NOISE, REGRESSED or IMPROVED as its bound directs."""

from __future__ import annotations

import itertools
import math

import pytest

from grpc_resilience_mesh.chaos.compare.decide import (
    judge_expectation,
    judge_latency,
    parse_bound,
    slack,
)
from grpc_resilience_mesh.chaos.compare.inputs import machine_drift
from grpc_resilience_mesh.chaos.compare.stats import mann_whitney, mid_ranks

MAX_KEY = ("full", "fault", "total_ms", "<= 3000")
MIN_KEY = ("full", "fault", "ok", ">= 100")
RANGE_KEY = ("full", "fault", "dependency_calls", ">= 10 and <= 14")


def test_mid_ranks_share_tied_positions() -> None:
    assert mid_ranks([5.0, 1.0, 5.0, 3.0]) == [3.5, 1.0, 3.5, 2.0]


def test_complete_separation_of_three_runs_is_one_split_in_twenty() -> None:
    result = mann_whitney([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert result.exact and result.splits == math.comb(6, 3)
    assert result.p_higher == pytest.approx(1 / 20)
    assert result.p_lower == 1.0
    assert result.u == 9.0


def test_the_exact_p_value_counts_every_split_at_least_as_extreme() -> None:
    base, cur = [3.0, 1.0, 4.0, 1.5], [5.0, 9.0, 2.0, 6.0]
    pooled = base + cur

    def u(group: tuple[int, ...]) -> float:
        rest = [pooled[i] for i in range(8) if i not in group]
        return sum((pooled[i] > r) + 0.5 * (pooled[i] == r) for i in group for r in rest)

    observed = u((4, 5, 6, 7))
    splits = [u(g) for g in itertools.combinations(range(8), 4)]
    expected = sum(s >= observed for s in splits) / len(splits)
    assert mann_whitney(base, cur).p_higher == pytest.approx(expected)


def test_identical_runs_give_no_evidence_either_way() -> None:
    result = mann_whitney([100.0] * 3, [100.0] * 3)
    assert (result.p_higher, result.p_lower) == (1.0, 1.0)


def test_bounds_parse_and_slack_points_toward_the_nearer_bound() -> None:
    assert parse_bound(">= 10 and <= 14") == (10.0, 14.0)
    assert parse_bound("<= 0") == (None, 0.0)
    assert slack(12.0, 10.0, 14.0) == 2.0
    assert slack(300.0, 10.0, 14.0) == -286.0
    assert slack(98.0, 100.0, None) == -2.0


def test_the_same_values_are_within_noise() -> None:
    values = [1162.0, 1512.0, 1433.0]
    assert judge_expectation(MAX_KEY, values, values, "").status == "WITHIN NOISE"


def test_a_max_bound_regresses_upward_and_improves_downward() -> None:
    base = [1162.0, 1512.0, 1433.0]
    worse = judge_expectation(MAX_KEY, base, [2600.0, 2700.0, 2650.0], "")
    better = judge_expectation(MAX_KEY, base, [400.0, 450.0, 420.0], "")
    assert worse.status == "REGRESSED" and worse.effect is not None and worse.effect < 0
    assert better.status == "IMPROVED" and better.effect is not None and better.effect > 0
    assert "Mann-Whitney" in worse.test and "p=0.05" in worse.test


def test_a_min_bound_regresses_downward() -> None:
    check = judge_expectation(MIN_KEY, [100.0, 100.0, 100.0], [97.0, 98.0, 96.0], "")
    assert check.status == "REGRESSED"


def test_a_range_regresses_when_it_leaves_the_range_either_way() -> None:
    base = [12.0, 12.0, 12.0]
    assert judge_expectation(RANGE_KEY, base, [104.0, 104.0, 105.0], "").status == "REGRESSED"
    assert judge_expectation(RANGE_KEY, base, [9.0, 8.0, 9.0], "").status == "REGRESSED"


def test_a_separated_but_small_shift_inside_the_bound_is_noise() -> None:
    """Complete separation (p = 0.05) but 30 ms of the 1,500 ms left before the bound."""
    check = judge_expectation(MAX_KEY, [1500.0, 1505.0, 1510.0], [1530.0, 1535.0, 1540.0], "")
    assert check.status == "WITHIN NOISE"


def test_overlapping_runs_are_noise_however_far_the_medians() -> None:
    check = judge_expectation(MAX_KEY, [500.0, 1500.0, 2500.0], [900.0, 2400.0, 2900.0], "")
    assert check.status == "WITHIN NOISE"


def test_one_run_a_side_is_not_compared() -> None:
    check = judge_expectation(MAX_KEY, [1000.0], [2900.0], "")
    assert check.status == "NOT COMPARED" and check.effect is None


def test_two_runs_a_side_can_never_reach_significance() -> None:
    """C(4, 2) = 6 splits: the smallest one-sided p is 1/6, above 0.05."""
    check = judge_expectation(MAX_KEY, [1000.0, 1100.0], [2900.0, 2950.0], "")
    assert check.status == "WITHIN NOISE"


def _latencies(scale: float) -> list[float]:
    return [scale * (10 + (i * 37) % 50) for i in range(200)]


def test_latency_the_same_requests_are_within_noise() -> None:
    check = judge_latency("full", "fault", 50, (_latencies(1.0), _latencies(1.0)))
    assert check.status == "WITHIN NOISE" and check.effect == 0.0


def test_latency_doubled_regresses_and_halved_improves() -> None:
    base, doubled = _latencies(1.0), _latencies(2.0)
    assert judge_latency("full", "fault", 95, (base, doubled)).status == "REGRESSED"
    assert judge_latency("full", "fault", 95, (doubled, base)).status == "IMPROVED"


def test_latency_a_significant_shift_under_the_floor_is_noise() -> None:
    """+30 % on every request: the interval excludes 0, the factor is under 1.5."""
    check = judge_latency("full", "fault", 50, (_latencies(1.0), _latencies(1.3)))
    assert "95% CI [+" in check.test  # significant: the interval is above 0
    assert check.status == "WITHIN NOISE"


def test_latency_doubled_on_a_machine_that_drifted_threefold_is_noise() -> None:
    """A run whose own steady-state p50 moved 3x between its two checks cannot tell 2x."""
    samples = (_latencies(1.0), _latencies(2.0))
    assert judge_latency("full", "recovery", 50, samples, drift=3.0).status == "WITHIN NOISE"
    assert judge_latency("full", "recovery", 50, samples, drift=1.9).status == "REGRESSED"


def test_machine_drift_is_the_factor_between_the_two_steady_state_checks() -> None:
    variant = {"steady_before": {"p50_ms": 24.0}, "steady_after": {"p50_ms": 72.0}}
    assert machine_drift(variant) == 3.0
    assert machine_drift({"steady_before": {"p50_ms": 24.0}}) == 1.0


def test_latency_doubled_but_under_half_a_steady_median_is_noise() -> None:
    """Fast fallbacks at 0.1-0.6 steady-state medians, doubled: a factor of 2, +0.35 of one."""
    samples = ([v / 100 for v in _latencies(1.0)], [v / 100 for v in _latencies(2.0)])
    check = judge_latency("full", "fault", 50, samples)
    assert "95% CI [+" in check.test
    assert check.status == "WITHIN NOISE"
