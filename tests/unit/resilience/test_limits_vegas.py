"""VegasLimit on its own: the queue estimate against log10 thresholds, with the reference's
defaults (alpha 3, beta 6, step 1 below a limit of 100) and a pinned probe jitter."""

from __future__ import annotations

import pytest

from grpc_aio_resilience.limits import VegasLimit, VegasSettings

MS = 1e-3


def primed(settings: VegasSettings | None = None, jitter: float = 1.0) -> VegasLimit:
    """A Vegas limit whose no-load RTT is 10 ms (its first sample only sets that)."""
    vegas = VegasLimit(settings, jitter=lambda: jitter)
    vegas.on_sample(0.0, 10 * MS, 20, False)
    assert vegas.limit == vegas.settings.initial_limit
    assert vegas.rtt_noload_s == pytest.approx(10 * MS)
    return vegas


def test_no_queue_grows_by_beta() -> None:
    vegas = primed()
    vegas.on_sample(0.0, 10 * MS, 10, False)  # queue 0 <= log10 threshold 1: + beta (6)
    assert vegas.limit == 26


def test_a_small_queue_grows_by_one() -> None:
    vegas = primed()
    vegas.on_sample(0.0, 10.8 * MS, 10, False)  # queue ceil(20 x 0.074) = 2 < alpha 3
    assert vegas.limit == 21


def test_a_queue_within_alpha_and_beta_holds() -> None:
    vegas = primed()
    vegas.on_sample(0.0, 12.5 * MS, 10, False)  # queue ceil(20 x 0.2) = 4
    assert vegas.limit == 20


def test_a_queue_above_beta_shrinks_by_one() -> None:
    vegas = primed()
    for expected in (19, 18, 17):
        vegas.on_sample(0.0, 20 * MS, 20, False)  # queue ceil(L x 0.5) = 10, 9, 9 > 6
        assert vegas.limit == expected


def test_a_drop_shrinks_even_without_queue() -> None:
    vegas = primed()
    vegas.on_sample(0.0, 10 * MS, 20, True)
    assert vegas.limit == 19


def test_app_limited_calls_do_not_grow_the_limit() -> None:
    vegas = primed()
    vegas.on_sample(0.0, 10 * MS, 9, False)  # 9 x 2 < 20
    assert vegas.limit == 20


def test_above_100_the_steps_are_log10_of_the_limit() -> None:
    vegas = primed(VegasSettings(initial_limit=100))
    vegas.on_sample(0.0, 10 * MS, 50, False)  # log10(100) = 2: beta 12
    assert vegas.limit == 112
    vegas.on_sample(0.0, 10 * MS, 50, True)  # a drop: - 2
    assert vegas.limit == 110


def test_smoothing_blends_old_and_new() -> None:
    vegas = primed(VegasSettings(smoothing=0.5))
    vegas.on_sample(0.0, 10 * MS, 10, False)  # 0.5 x 20 + 0.5 x 26
    assert vegas.limit == 23


def test_max_concurrency_caps_the_growth() -> None:
    vegas = primed(VegasSettings(max_concurrency=22))
    vegas.on_sample(0.0, 10 * MS, 20, False)
    assert vegas.limit == 22


def test_a_faster_sample_lowers_the_no_load_rtt_only() -> None:
    vegas = primed()
    vegas.on_sample(0.0, 5 * MS, 20, False)
    assert vegas.limit == 20 and vegas.rtt_noload_s == pytest.approx(5 * MS)


def test_the_probe_remeasures_the_no_load_rtt_after_jitter_x_30_x_limit_samples() -> None:
    draws = iter([0.5, 0.9])
    vegas = VegasLimit(jitter=lambda: next(draws))
    vegas.on_sample(0.0, 10 * MS, 1, False)
    for _ in range(298):  # app-limited, so the limit (and the probe's 0.5 x 30 x 20) holds
        vegas.on_sample(0.0, 30 * MS, 1, False)
    assert vegas.rtt_noload_s == pytest.approx(10 * MS)
    vegas.on_sample(0.0, 30 * MS, 1, False)  # the 300th sample probes
    assert vegas.rtt_noload_s == pytest.approx(30 * MS)
    assert next(draws, None) is None  # the second jitter was drawn for the next probe


def test_a_non_positive_rtt_is_refused() -> None:
    with pytest.raises(ValueError, match="rtt must be > 0"):
        VegasLimit().on_sample(0.0, 0.0, 1, False)
