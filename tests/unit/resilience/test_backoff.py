"""Full-jitter backoff bounds and spread, and how server pushback combines with it."""

from __future__ import annotations

import random
import statistics

import pytest

from grpc_aio_resilience.classify import NO_RETRY, pushback_s
from grpc_aio_resilience.retry import full_jitter_s, retry_delay_s


@pytest.mark.parametrize("retry", range(12))
def test_jitter_stays_within_zero_and_the_capped_exponential(retry: int) -> None:
    rng = random.Random(retry)
    ceiling_s = min(1.0, 0.05 * 2**retry)
    samples = [full_jitter_s(retry, 0.05, 1.0, rng) for _ in range(2000)]
    assert all(0.0 <= s <= ceiling_s for s in samples)
    assert max(samples) > 0.95 * ceiling_s


def test_full_jitter_spreads_uniformly_over_the_window() -> None:
    rng = random.Random(2024)
    samples = [full_jitter_s(3, 0.05, 8.0, rng) for _ in range(20_000)]
    ceiling_s = 0.4
    assert statistics.fmean(samples) == pytest.approx(ceiling_s / 2, rel=0.03)
    for quarter in range(4):
        low, high = quarter * ceiling_s / 4, (quarter + 1) * ceiling_s / 4
        share = sum(low <= s < high for s in samples) / len(samples)
        assert share == pytest.approx(0.25, abs=0.02)


def test_same_seed_same_delays() -> None:
    first = [full_jitter_s(n, 0.05, 1.0, random.Random(7)) for n in range(5)]
    again = [full_jitter_s(n, 0.05, 1.0, random.Random(7)) for n in range(5)]
    assert first == again


def test_pushback_wins_over_a_shorter_jitter_and_loses_to_a_longer_one() -> None:
    assert retry_delay_s(0.03, 0.2) == 0.2
    assert retry_delay_s(0.3, 0.2) == 0.3
    assert retry_delay_s(0.3, None) == 0.3


def test_zero_pushback_means_retry_now() -> None:
    assert retry_delay_s(0.3, 0.0) == 0.0


@pytest.mark.parametrize(
    ("trailers", "expected"),
    [
        ((("grpc-retry-pushback-ms", "200"),), 0.2),
        ((("grpc-retry-pushback-ms", "0"),), 0.0),
        ((("grpc-retry-pushback-ms", "-1"),), NO_RETRY),
        ((("grpc-retry-pushback-ms", "soon"),), NO_RETRY),
        ((("other", "1"),), None),
        ((), None),
        (None, None),
    ],
)
def test_pushback_parsing(trailers: tuple[tuple[str, str], ...] | None, expected: float) -> None:
    assert pushback_s(trailers) == expected
